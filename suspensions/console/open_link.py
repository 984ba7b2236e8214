"""A sealed approval link (docs/console.md, "Links an agent hands its person"): `/console/open/{token}`.

An agent (suspensions-mcp's URL-mode elicitation) hands its person the link
`POST /api/v1/approvals/{id}/link` minted (approval_links.py). It names no
approver, so it only opens the approval's page to a signed-in approver of its
scope, who decides there with the page's own form and the same refusals. It
decides nothing itself and writes nothing. A visitor not signed in signs in
first, the token waiting in the session (as an email link's does, act.py). Refused, each with a page: a
tampered or foreign token and an approval outside the approver's scopes (404,
leaking nothing), an expired link (410), and a used one: the approval was
decided, or its run moved past the revision the link was minted at (409).
"""

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from .. import approval_links
from ..models import Approval, ApprovalStatus, Role, Run
from ..principals import principal_of
from .access import staff_required
from .act import TEMPLATE, Refusal, back_to_link

# The link opened before signing in, until `resume` takes the approver back to it: never in the sign-in page's
# `next`, a URL that proxies log (docs/deploy.md, "Logs").
WAITING_LINK = "suspensions.approval_link"
NOT_FOUND = Refusal(404, "Link not found", "This link is not valid, or its approval is not yours to decide.")


@require_GET
def open_link(request: HttpRequest, token: str) -> HttpResponse:
    if not request.user.is_authenticated:
        request.session[WAITING_LINK] = token
        return redirect_to_login(reverse("console:open_resume"))
    return _open(request, token)


@require_GET
def resume(request: HttpRequest) -> HttpResponse:
    """After the sign-in: back to the sealed approval link the approver opened."""
    return back_to_link(request, WAITING_LINK, "console:open_link")


@staff_required
def _open(request: HttpRequest, token: str) -> HttpResponse:
    link = approval_links.read(token)
    try:
        if link is None:
            raise NOT_FOUND
        check(request, link)
    except Refusal as refusal:
        return render(request, TEMPLATE, {"refusal": refusal}, status=refusal.status)
    return redirect("console:approval", link.approval_id)


def check(request: HttpRequest, link: approval_links.Link) -> None:
    """The Refusal that stops a link, for the signed-in approver; reads only."""
    principal = principal_of(request)
    approval = Approval.objects.filter(pk=link.approval_id, run_id=link.run_id).first()
    if approval is None or not principal.can(Role.APPROVER, approval.scope):
        raise NOT_FOUND
    if approval.status != ApprovalStatus.PENDING:
        text = f"This approval was already decided ({approval.status}); the link is used up."
        raise Refusal(409, "Already decided", text)
    if link.expired(timezone.now()):
        raise Refusal(410, "This link has expired", "Ask the agent for a new link, or open the console.")
    revision = Run.objects.filter(pk=link.run_id).values_list("revision", flat=True).first()
    if revision != link.revision:
        text = "The run moved on since this link was made; open the approval in the console to see where it stands."
        raise Refusal(409, "This link is out of date", text)
