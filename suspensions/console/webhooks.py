"""Webhook endpoints in the console (docs/api.md, "7.8 Webhooks"; issue "Push, not poll"): for operators only.

The pages call the same services as the API (services/webhooks.py) and read
the same answer bodies (suspensions/wire). Every POST redirects (post/redirect/get), so a reload
never creates a second endpoint or rotates twice. A new or rotated secret is
shown once, on a one-time page the POST redirects to: the session keeps only
the endpoint's id and a SHA-256 of the secret (never the secret, and never in
a message: messages travel in a signed, not encrypted, cookie); the page
reads the sealed secret from the endpoint and forgets the session entry, so
a reload or a later visit shows no secret. Every other POST redirects back
to the endpoint's page with a message.
"""

import hashlib
from typing import Any
from uuid import UUID

from django import forms
from django.contrib import messages
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from .. import selectors
from ..exceptions import NotFound, ServiceError
from ..models import MessageStatus, Role, WebhookFormat
from ..principals import Principal, principal_of
from ..services import webhooks
from ..wire.answers_operators import WebhookEndpointOut, WebhookMessageOut
from . import paging
from .access import operator_only
from .forms import refused_into

# What an operator reads when a change did not go through (the service's code -> a sentence).
REFUSED = {
    "invalid_state": "Nothing was sent: {detail}.",
    "forbidden": "You do not hold the operator role in that scope.",
    "not_found": "This endpoint or message no longer exists or is outside your scopes.",
}
# Where a secret waits for its one showing: {"endpoint": id, "digest": SHA-256 of the secret, "created": bool}.
SECRET_ONCE = "console.webhook_secret"
# Badge tones of console.css, by endpoint and message status.
TONE = {
    "active": "state-completed",
    "disabled": "state-failed",
    MessageStatus.PENDING: "state-paused",
    MessageStatus.DELIVERED: "state-completed",
    MessageStatus.FAILED: "state-failed",
}


# A staff user who is an operator nowhere gets a 403 page: the webhook pages are the operators'.
operator_required = operator_only("webhooks")


class EndpointForm(forms.Form):
    scope = forms.ChoiceField(help_text="The endpoint receives this scope's events and those of every scope below it.")
    url = forms.CharField(
        label="URL", max_length=webhooks.MAX_URL, strip=False, help_text="http or https; no user name or password."
    )
    event_types = forms.MultipleChoiceField(
        label="Event types",
        choices=[(t, t) for t in webhooks.EVENT_TYPES],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="None checked: every type.",
    )
    format = forms.ChoiceField(
        choices=[(WebhookFormat.STANDARD, "Standard Webhooks (signed JSON)"), (WebhookFormat.SLACK, "Slack message")]
    )
    description = forms.CharField(max_length=webhooks.MAX_DESCRIPTION, required=False)

    def __init__(self, *args: Any, scopes: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"].choices = [(s, s) for s in scopes]  # type: ignore[attr-defined]


# -- pages -------------------------------------------------------------------------------------


@require_GET
@operator_required
def endpoints(request: HttpRequest) -> HttpResponse:
    principal = principal_of(request)
    failed = Count("messages", filter=Q(messages__status=MessageStatus.FAILED))
    pending = Count("messages", filter=Q(messages__status=MessageStatus.PENDING))
    queryset = selectors.webhook_endpoints(principal).annotate(failed=failed, pending=pending).order_by("-id")
    after = paging.id_cursor(request.GET["after"]) if request.GET.get("after") else None
    rows, more = paging.page(queryset, after)
    context = {
        "nav": "webhooks",
        "rows": [endpoint_row(e, failed=e.failed, pending=e.pending) for e in rows],  # type: ignore[attr-defined]
        "next_link": paging.link(request.GET, str(rows[-1].id)) if more else "",
        "paged": bool(request.GET.get("after")),
        "first_link": paging.link(request.GET),
    }
    return render(request, "console/webhooks.html", context)


def endpoint_row(endpoint: Any, **extra: Any) -> dict[str, Any]:
    body = WebhookEndpointOut.of(endpoint).wire()
    status = "active" if endpoint.active else "disabled"
    return {
        **body,
        **extra,
        "status": status,
        "tone": TONE[status],
        "created": endpoint.created_at,
        "rotation_until": endpoint.previous_secret_expires_at,
    }


@require_http_methods(["GET", "POST"])
@operator_required
def new_endpoint(request: HttpRequest) -> HttpResponse:
    principal = principal_of(request)
    scopes = principal.scopes_with(Role.OPERATOR)
    if request.method == "GET":
        form = EndpointForm(scopes=scopes, initial={"format": WebhookFormat.STANDARD})
        return render(request, "console/webhook_form.html", {"nav": "webhooks", "form": form})
    form = EndpointForm(request.POST, scopes=scopes)
    if form.is_valid():
        try:
            endpoint, secret = webhooks.create_endpoint(principal=principal, **form.cleaned_data)
        except ServiceError as exc:
            refused_into(form, exc)
        else:
            return shown_once(request, endpoint, secret, created=True)
    return render(request, "console/webhook_form.html", {"nav": "webhooks", "form": form}, status=400)


def shown_once(request: HttpRequest, endpoint: Any, secret: str, *, created: bool) -> HttpResponse:
    """The POST's answer: a redirect to the one-time secret page, so a reload repeats a GET, never the change."""
    request.session[SECRET_ONCE] = {"endpoint": str(endpoint.id), "digest": fingerprint(secret), "created": created}
    return redirect("console:webhook_secret", pk=endpoint.id)


def fingerprint(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@require_GET
@never_cache
@operator_required
def secret_page(request: HttpRequest, pk: UUID) -> HttpResponse:
    """The one page that shows a signing secret, once: the session entry is gone after this GET.

    A second visit (a reload, the back button, a bookmark) goes to the endpoint's page and says why.
    The digest check keeps a stale entry from showing a secret rotated since by someone else.
    """
    kept = request.session.pop(SECRET_ONCE, None)
    found = visible(principal_of(request), pk)
    fresh = isinstance(kept, dict) and kept.get("endpoint") == str(pk)
    if not fresh or kept.get("digest") != fingerprint(found.secret):
        messages.info(request, "The signing secret is shown once, right after it is made: rotate it to get a new one.")
        return redirect("console:webhook", pk=pk)
    context = {"nav": "webhooks", "endpoint": endpoint_row(found), "secret": found.secret, "created": kept["created"]}
    return render(request, "console/webhook_secret.html", context)


@require_GET
@operator_required
def endpoint(request: HttpRequest, pk: UUID) -> HttpResponse:
    principal = principal_of(request)
    found = visible(principal, pk)
    queryset = selectors.webhook_messages(principal, found.id).order_by("-id")
    after = paging.id_cursor(request.GET["after"]) if request.GET.get("after") else None
    rows, more = paging.page(queryset, after)
    context = {
        "nav": "webhooks",
        "endpoint": endpoint_row(found),
        "messages_shown": [message_row(m) for m in rows],
        "next_link": paging.link(request.GET, str(rows[-1].id)) if more else "",
        "paged": bool(request.GET.get("after")),
        "first_link": paging.link(request.GET),
    }
    return render(request, "console/webhook.html", context)


def visible(principal: Principal, pk: UUID) -> Any:
    try:
        return webhooks.endpoint_of(principal, pk)
    except NotFound:
        raise Http404("webhook not found") from None


def message_row(message: Any) -> dict[str, Any]:
    body = WebhookMessageOut.of(message).wire()
    return {
        **body,
        "tone": TONE[message.status],
        "created": message.created_at,
        "next_attempt": message.next_attempt_at,
        # Redelivery is offered where the service accepts it: a message that is no longer on its way.
        "redeliverable": message.status != MessageStatus.PENDING,
        # The presenter's attempts with their times as datetimes, for the page's time format.
        "attempt_rows": [
            {**a, "moment": row.at} for a, row in zip(body["attempts"], message.attempt_rows.all(), strict=True)
        ],
    }


# -- changes: redirect-after-POST, with a message or to the one-time secret page ---------------

DONE = {
    "disable": "Disabled. Nothing is sent to this endpoint until it is enabled again.",
    "enable": "Enabled. New events are sent to this endpoint again.",
}


@require_POST
@operator_required
def change(request: HttpRequest, pk: UUID, action: str) -> HttpResponse:
    principal = principal_of(request)
    back = redirect("console:webhook", pk=pk)
    try:
        if action == "rotate":
            found, secret = webhooks.rotate_secret(principal=principal, endpoint_id=pk)
            return shown_once(request, found, secret, created=False)
        if action == "test":
            message = webhooks.send_test(principal=principal, endpoint_id=pk)
            messages.success(request, f"Test event queued as message {message.id}.")
        else:
            toggle = webhooks.disable_endpoint if action == "disable" else webhooks.enable_endpoint
            toggle(principal=principal, endpoint_id=pk)
            messages.success(request, DONE[action])
    except NotFound:
        raise Http404("webhook not found") from None
    except ServiceError as exc:
        messages.error(request, REFUSED.get(exc.code, "{detail}").format(detail=exc.detail))
    return back


@require_POST
@operator_required
def redeliver(request: HttpRequest, pk: UUID, message_id: UUID) -> HttpResponse:
    try:
        webhooks.redeliver(principal=principal_of(request), endpoint_id=pk, message_id=message_id)
    except NotFound:
        raise Http404("message not found") from None
    except ServiceError as exc:
        messages.error(request, REFUSED.get(exc.code, "{detail}").format(detail=exc.detail))
    else:
        messages.success(request, f"Message {message_id} is queued for delivery again.")
    return redirect("console:webhook", pk=pk)
