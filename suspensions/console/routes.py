"""Notification routes in the console (docs/notifications.md, "Routes"), beside the webhooks: for operators only.

One page lists the routes of the operator's scopes with the count of their
scopes' notifications by status (failed ones are the dead letters to look
at, in the admin), and holds the form of a new route. The pages call the
same services as the API (services/notification_routes.py); every POST
redirects (post/redirect/get), with a message.
"""

from typing import Any
from uuid import UUID

from django import forms
from django.contrib import messages
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from .. import selectors
from ..exceptions import NotFound, ServiceError
from ..models import ROUTE_EVENT_TYPES, MessageStatus, NotificationChannel, Role
from ..principals import principal_of
from ..services import notification_routes as routes
from ..services.webhooks import MAX_DESCRIPTION
from ..wire.answers_operators import NotificationRouteOut
from .forms import refused_into
from .webhooks import TONE, operator_required

DONE = {
    "disable": "Route disabled: it asks nobody from now on.",
    "enable": "Route enabled.",
    "delete": "Route deleted.",
}


class RouteForm(forms.Form):
    scope = forms.ChoiceField(help_text="The route is told of this scope's approvals and those of every scope below.")
    kind = forms.ChoiceField(choices=[(NotificationChannel.EMAIL, "Email"), (NotificationChannel.SLACK, "Slack")])
    target = forms.CharField(
        max_length=routes.MAX_EMAIL, help_text="An email address, or a Slack channel id (C0123ABC)."
    )
    event_types = forms.MultipleChoiceField(
        label="Event types",
        choices=[(t, t) for t in ROUTE_EVENT_TYPES],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="None checked: every approval event.",
    )
    description = forms.CharField(max_length=MAX_DESCRIPTION, required=False)

    def __init__(self, *args: Any, scopes: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"].choices = [(s, s) for s in scopes]  # type: ignore[attr-defined]


@require_http_methods(["GET", "POST"])
@operator_required
def route_list(request: HttpRequest) -> HttpResponse:
    """The routes (newest first), the notifications' counts, and the new-route form (its POST creates one)."""
    principal = principal_of(request)
    form = RouteForm(request.POST or None, scopes=principal.scopes_with(Role.OPERATOR))
    if request.method == "POST" and form.is_valid():
        try:
            routes.create_route(principal=principal, **form.cleaned_data)
        except ServiceError as exc:
            refused_into(form, exc)
        else:
            messages.success(request, "Route created.")
            return redirect("console:routes")
    counts = dict(
        selectors.notifications(principal).values_list("status").annotate(n=Count("id")).values_list("status", "n")
    )
    rows = selectors.notification_routes(principal).order_by("-id")[:200]
    context = {
        "nav": "routes",
        "rows": [
            {**NotificationRouteOut.of(r).wire(), "tone": TONE["active" if r.active else "disabled"]} for r in rows
        ],
        "counts": {status: counts.get(status, 0) for status in MessageStatus.values},
        "form": form,
    }
    return render(request, "console/routes.html", context, status=400 if form.errors else 200)


@require_POST
@operator_required
def change(request: HttpRequest, pk: UUID, action: str) -> HttpResponse:
    principal = principal_of(request)
    try:
        if action == "delete":
            routes.delete_route(principal=principal, route_id=pk)
        else:
            routes.set_active(principal=principal, route_id=pk, active=action == "enable")
    except NotFound:
        raise Http404("route not found") from None
    messages.success(request, DONE[action])
    return redirect("console:routes")
