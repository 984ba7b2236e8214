from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from suspensions import health
from suspensions.api import a2a
from suspensions.api.errors import unknown_api_path
from suspensions.console import oidc as oidc_views
from suspensions.observability import views as observability_views
from suspensions.slack.interactions import interactions as slack_interactions

handler400 = "suspensions.api.errors.bad_request"
handler404 = "suspensions.api.errors.not_found"
handler500 = "suspensions.api.errors.server_error"

urlpatterns = [
    path("api/v1/", include("suspensions.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up script as a file: the page runs under a CSP with no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="docs"),
    # Any other /api/ path (an unknown route, a malformed id) is a problem+json 404,
    # with DEBUG on too, where Django would answer its HTML page instead of handler404.
    re_path(r"^api/", unknown_api_path),
    # A2A (docs/api.md, "A2A"): the Agent Card where A2A clients look for it, and the JSON-RPC endpoint it names.
    path(".well-known/agent-card.json", a2a.agent_card, name="a2a-card"),
    path("a2a/", a2a.endpoint, name="a2a"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", observability_views.metrics, name="metrics"),
    # Single sign-on (docs/identity.md): mozilla-django-oidc's URL names, which its backend reverses.
    path("oidc/authenticate/", oidc_views.StartSignIn.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", oidc_views.FinishSignIn.as_view(), name="oidc_authentication_callback"),
    path("admin/", admin.site.urls),
    # Slack's Interactivity request URL (docs/notifications.md, "Slack"): signed by Slack, outside /api/ and its tokens.
    path("integrations/slack/interactions", slack_interactions, name="slack-interactions"),
    path("console/", include("suspensions.console.urls")),
    # SCIM 2.0 provisioning (docs/identity.md, "Provisioning (SCIM) and leavers"): a provisioner token, SCIM errors.
    path("scim/v2/", include("suspensions.scim.urls")),
    path("", RedirectView.as_view(pattern_name="console:dashboard", permanent=False)),
]
