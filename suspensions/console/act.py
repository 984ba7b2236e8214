"""The one-click links of approver emails (docs/notifications.md, "Email"): `/console/act/{token}`.

A GET never decides: mail scanners and link previews open every link, so the
page shows what would be decided and a button; the decision is that page's
POST (CSRF-protected), made as the token's approver through the same
`services.decide` as the API and the console: quorum, separation of duties,
deadlines and stale versions are the service's. Every refusal is a page with
a 4xx status, and is found before the first write: a used link (its approver
voted, or the approval was decided), an expired one, a stale one (the pause
moved on since the email), one whose approver may not decide (any more). A
tampered token is a plain 404. With EMAIL_LINKS_REQUIRE_LOGIN the approver
signs in first, and only the token's approver may use it: the token waits in
the session meanwhile, never in the sign-in page's `next` (a URL that proxies
log), and `/console/act/` takes the approver back to the link's page.
"""

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.http import require_http_methods

from .. import display, email_links, notify, services
from ..exceptions import SeparationOfDuties, ServiceError
from ..models import Approval, ApprovalStatus, ApprovalVote, Role, Run, Suspension
from ..principals import Principal, for_user
from ..services.approval_checks import check_duties
from .approvals import LOST, outcome
from .forms import MAX_TEXT

TEMPLATE = "console/act.html"
# The link an approver opened before signing in (EMAIL_LINKS_REQUIRE_LOGIN), until `resume` takes them back to it.
WAITING_LINK = "suspensions.email_link"
TITLES = {
    "approve": "Approve this request?",
    "deny": "Deny this request?",
}


@dataclass
class Refusal(Exception):
    """Why a link cannot decide: the page's status, title and sentence."""

    status: int
    title: str
    text: str


@dataclass
class Ready:
    cap: email_links.Capability
    principal: Principal
    approval: Approval


@csrf_protect
@require_http_methods(["GET", "POST"])
def act(request: HttpRequest, token: str) -> HttpResponse:
    cap = email_links.read(token)
    if cap is None or not cap.decision:
        return _page(request, None, Refusal(404, "Link not found", "This link is not valid. Open the console instead."))
    if settings.EMAIL_LINKS_REQUIRE_LOGIN:
        if not request.user.is_authenticated:
            request.session[WAITING_LINK] = token
            return redirect_to_login(reverse("console:act_resume"))
        if request.user.pk != cap.user_id:
            text = f"This link was sent to another approver; you are signed in as {request.user.get_username()}."
            return _page(request, None, Refusal(403, "Not your link", text))
    try:
        ready = check(cap)
    except Refusal as refusal:
        return _page(request, None, refusal)
    if request.method == "GET":
        return _page(request, ready)
    return _post(request, ready)


def back_to_link(request: HttpRequest, key: str, route: str) -> HttpResponse:
    """After the sign-in: back to the link the approver opened (`route`), whose token the session kept under `key`."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.path)
    token = request.session.pop(key, None)
    if not isinstance(token, str):
        return redirect("console:inbox")
    return redirect(route, token)


@require_http_methods(["GET"])
def resume(request: HttpRequest) -> HttpResponse:
    """After the sign-in: back to the emailed link the approver opened."""
    return back_to_link(request, WAITING_LINK, "console:act")


def _post(request: HttpRequest, ready: Ready) -> HttpResponse:
    reason = request.POST.get("reason", "").strip()[:MAX_TEXT]
    if ready.cap.decision == "deny" and not reason:
        return _page(request, ready, error="A denial needs a reason: the agent's run fails with it.", status=400)
    version = services.Version(
        run_id=ready.approval.run_id, suspension_id=ready.approval.pk, run_revision=ready.cap.revision
    )
    try:
        decision = services.decide(
            principal=ready.principal,
            suspension_id=ready.approval.pk,
            version=version,
            decision=ready.cap.decision,
            reason=reason,
        )
    except ServiceError as exc:
        status = exc.status if 400 <= exc.status < 500 else 409
        return _page(request, None, Refusal(status, "Nothing was decided", LOST.get(exc.code, exc.title)))
    done = {"title": "Done", "text": outcome(decision, ready.cap.decision, ready.approval.quorum)}
    return _page(request, ready, done=done)


def check(cap: email_links.Capability) -> Ready:
    """The link's approver, approval and version, or the Refusal that stops it; reads only."""
    user = get_user_model().objects.filter(pk=cap.user_id).first()
    approval = Approval.objects.filter(pk=cap.approval_id, run_id=cap.run_id).first()
    if user is None or approval is None:
        raise Refusal(404, "Link not found", "This approval or its approver no longer exists.")
    principal = for_user(user)
    # Before anything about the approval: a deactivated approver, or one who lost the role, learns
    # nothing from an old link, not even whether and by whom it was decided.
    if not principal.can(Role.APPROVER, approval.scope):
        raise Refusal(403, "You may not decide this", LOST["forbidden"])
    _check_used(principal, approval)
    now = timezone.now()
    if cap.expired(now) or (approval.expires_at is not None and approval.expires_at <= now):
        raise Refusal(410, "This link has expired", "The approval's deadline has passed; nothing can be decided.")
    live = Suspension.objects.filter(pk=approval.pk, run_id=approval.run_id).first()
    revision = Run.objects.filter(pk=approval.run_id).values_list("revision", flat=True).first()
    if live is None or revision != cap.revision:
        text = "The run moved on since this email was sent; open the approval in the console to see where it stands."
        raise Refusal(409, "This link is out of date", text)
    _check_allowed(principal, approval, live)
    return Ready(cap=cap, principal=principal, approval=approval)


def _check_used(principal: Principal, approval: Approval) -> None:
    """Single use: the approver's vote, or any decision of the approval, used the link up."""
    if approval.status != ApprovalStatus.PENDING:
        by = "you" if approval.decided_by == principal.name else (approval.decided_by or "the deadline")
        text = f"This approval was already decided ({approval.status}, by {by}); nothing more to do."
        raise Refusal(409, "Already decided", text)
    if ApprovalVote.objects.filter(suspension_id=approval.pk, voter_key=principal.person).exists():
        text = "You already voted to approve this; your vote counts once. It waits for the other approvers."
        raise Refusal(409, "Already used", text)


def _check_allowed(principal: Principal, approval: Approval, live: Suspension) -> None:
    if live.correlation_id:
        raise Refusal(403, "Decided elsewhere", LOST["wrong_gate"])
    try:
        check_duties(principal, approval)
    except SeparationOfDuties:
        raise Refusal(403, "You may not decide this", LOST["separation_of_duties"]) from None
    except ServiceError as exc:
        raise Refusal(403, "You may not decide this", exc.detail) from None


def _page(
    request: HttpRequest,
    ready: Ready | None,
    refusal: Refusal | None = None,
    *,
    error: str = "",
    done: dict[str, str] | None = None,
    status: int = 200,
) -> HttpResponse:
    context: dict[str, Any] = {"refusal": refusal, "error": error, "done": done}
    if ready is not None:
        approval = ready.approval
        context |= {
            "decision": ready.cap.decision,
            "title": TITLES[ready.cap.decision],
            "approval": approval,
            "agent": display.escaped(approval.agent_id or "an agent"),
            "calls": notify.calls_of(approval),
            "deadline": notify.deadline_text(approval),
            "approver": ready.principal.name.removeprefix("user:"),
            "quorum": approval.quorum,
            "console_url": reverse("console:approval", args=[approval.pk]),
        }
    return render(request, TEMPLATE, context, status=refusal.status if refusal else status)
