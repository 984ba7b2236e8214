"""`POST /integrations/slack/interactions` (docs/notifications.md, "Slack"): a press on an approval's Slack message, and
the deny modal.

Trust: only a request Slack signed is read. The `v0` signature
(HMAC-SHA256 of `v0:{timestamp}:{body}` under SLACK_SIGNING_SECRET, in
`X-Slack-Signature`) must match and `X-Slack-Request-Timestamp` be within
five minutes; anything else is 401 and nothing is written.

The person: approvers.approver_for (a linked Slack id, else the Slack
profile's email); anyone else gets an ephemeral "not linked / not allowed"
and nothing is written. The decision goes through the same decide service
as the console and the API, with the version the message showed: quorum,
separation of duties and staleness are its refusals, shown to the presser
ephemerally; a message whose approval is no longer pending is stale and
is also updated then to show the outcome.

Approve decides at once. Deny opens a modal (views.open) asking for a
reason; its `view_submission` comes back here and denies. A retry of the
same press (Slack resends when an answer is late) is the decide service's
replay: the same person's same decision is recorded once.

Slack wants an answer within 3 s: a request waits on at most one Slack
call, bounded (client.INTERACTIVE_TIMEOUT, no retry) and outside any
transaction: users.info when the presser must be found by email, or views.open
for the deny dialog (whose trigger expires with the 3 s). The ephemeral answer
and the edit of a stale message are sent from Celery after the answer
(slack.answers); a decided message is updated from Celery by the DECIDED
notification the decision's fan-out writes. So a Deny press checks the presser
only as far as the database knows (a linked member); an unlinked one is looked
up when the dialog is submitted, where a refusal is shown in the dialog.
"""

import logging
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from slack_sdk.errors import SlackClientError
from slack_sdk.signature import SignatureVerifier

from .. import services, strictjson
from ..exceptions import (
    InvalidRequest,
    NotFound,
    ServiceError,
    Unauthenticated,
)
from ..models import Approval, ApprovalStatus
from ..problems import PROBLEM, problem_body
from ..services.slack_identities import link_slack_user
from . import answers, blocks, client
from .approvers import NOT_ALLOWED, Approver, approver_for, known_not_allowed, refusal_for

log = logging.getLogger(__name__)

Press = dict[str, Any]


@csrf_exempt
@require_POST
def interactions(request: HttpRequest) -> HttpResponse:
    """Slack's Interactivity request URL: block_actions (a button) and view_submission (the deny modal)."""
    if not client.enabled():
        return _problem(NotFound("Slack approvals are not configured here"))
    if not _signed(request):
        return _problem(Unauthenticated("not a request signed by Slack in the last five minutes"))
    try:
        payload = strictjson.loads(request.POST["payload"])
        if not isinstance(payload, dict):
            raise ValueError("payload is not an object")
        if payload.get("type") == "block_actions":
            return on_action(payload)
        if payload.get("type") == "view_submission":
            return on_submission(payload)
    except (KeyError, ValueError, TypeError, AttributeError, IndexError):
        return _problem(InvalidRequest("not an interaction payload this service sent buttons for"))
    return HttpResponse(status=200)  # other interactions (a modal closed, a shortcut) need no answer


def _signed(request: HttpRequest) -> bool:
    timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
    signature = request.headers.get("X-Slack-Signature", "")
    # The verifier would raise on a timestamp that is not a number: a 500 for a client's header.
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12 and signature):
        return False
    try:
        body = request.body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return SignatureVerifier(settings.SLACK_SIGNING_SECRET).is_valid(body, timestamp, signature)


def _problem(error: ServiceError) -> JsonResponse:
    # Not problems.problem_json_response: its 401 names the API's Bearer scheme, which Slack never uses.
    return JsonResponse(problem_body(error), status=error.status, content_type=PROBLEM)


def on_action(payload: Press) -> HttpResponse:
    """A button: Approve decides at once, Deny opens the reason modal; Open (a link) needs nothing here."""
    action = payload["actions"][0]
    if action.get("action_id") not in (blocks.APPROVE, blocks.DENY):
        return HttpResponse(status=200)
    pressed = blocks.parse_value(str(action["value"]))
    channel = _channel_of(payload)
    slack_user = str(payload["user"]["id"])
    approval = Approval.objects.filter(pk=pressed.approval_id).first()
    if action["action_id"] == blocks.DENY:
        return _open_deny(payload, approval, channel, slack_user)
    approver = approver_for(slack_user, approval) if approval is not None else None
    if approval is None or approver is None:
        answers.tell_later(channel, slack_user, refusal_for(slack_user) if approval is not None else NOT_ALLOWED)
        return HttpResponse(status=200)
    _, text = decide(approver, slack_user, pressed, approval, decision="approve", where=(channel, _ts_of(payload)))
    answers.tell_later(channel, slack_user, text)
    return HttpResponse(status=200)


def _open_deny(payload: Press, approval: Approval | None, channel: str, slack_user: str) -> HttpResponse:
    """The deny dialog, the press's one Slack call; refused here only when the database knows the presser may not."""
    if approval is None or known_not_allowed(slack_user, approval):
        answers.tell_later(channel, slack_user, NOT_ALLOWED)
        return HttpResponse(status=200)
    value = str(payload["actions"][0]["value"])
    modal = blocks.deny_modal(value, channel=channel, message_ts=_ts_of(payload))
    _call("views.open", trigger_id=str(payload["trigger_id"]), view=modal)
    return HttpResponse(status=200)


def on_submission(payload: Press) -> HttpResponse:
    """The deny modal's submission: deny with its reason; a refusal is shown in the modal, which stays open."""
    view = payload["view"]
    if view.get("callback_id") != blocks.DENY_MODAL:
        return HttpResponse(status=200)
    metadata = strictjson.loads(view["private_metadata"])
    pressed = blocks.parse_value(str(metadata["value"]))
    reason = str(view["state"]["values"][blocks.REASON][blocks.REASON].get("value") or "")
    slack_user = str(payload["user"]["id"])
    approval = Approval.objects.filter(pk=pressed.approval_id).first()
    approver = approver_for(slack_user, approval) if approval is not None else None
    if approval is None or approver is None:
        return _modal_error(refusal_for(slack_user) if approval is not None else NOT_ALLOWED)
    if not reason.strip():
        return _modal_error("A denial needs a reason.")
    where = (str(metadata.get("channel", "")), str(metadata.get("ts", "")))
    decided, text = decide(approver, slack_user, pressed, approval, decision="deny", reason=reason, where=where)
    if not decided:
        return _modal_error(text)
    answers.tell_later(where[0], slack_user, text)
    return HttpResponse(status=200)  # an empty 200 closes the modal


def _modal_error(text: str) -> JsonResponse:
    return JsonResponse({"response_action": "errors", "errors": {blocks.REASON: text[:2000]}})


def decide(
    approver: Approver,
    slack_user: str,
    pressed: blocks.Pressed,
    approval: Approval,
    *,
    decision: str,
    reason: str = "",
    where: tuple[str, str],
) -> tuple[bool, str]:
    """The decision through the one decide service, as the approver: (went through, what to tell them).

    A stale message is updated to the approval's state. A press that went
    through links an approver found by email.
    """
    version = services.Version(
        run_id=pressed.run_id, suspension_id=pressed.approval_id, run_revision=pressed.run_revision
    )
    try:
        result = services.decide(
            principal=approver.principal,
            suspension_id=pressed.approval_id,
            version=version,
            decision=decision,
            reason=reason,
        )
    except ServiceError as refusal:
        if _show_current(approval.pk, *where):
            return False, f"This message is out of date: the approval is no longer open ({refusal.detail})."
        return False, refusal.detail
    if not approver.linked:
        link_slack_user(user_id=approver.user_id, slack_user_id=slack_user)
    return True, _told(result)


def _told(result: services.Decision) -> str:
    if isinstance(result, services.Voted):
        head = "Your vote is recorded" if result.fresh else "Your vote was already recorded"
        return f"{head}: {result.votes} of {result.quorum} approvals."
    if isinstance(result, services.Denied):
        return "You denied it: the run is failed with your reason." if result.fresh else "You had already denied it."
    assert isinstance(result, services.Claimed)
    return "You approved it: the run goes on." if result.fresh else "Your approval was already recorded."


def _show_current(approval_id: Any, channel: str, ts: str) -> bool:
    """After a refusal: if the approval is no longer pending the message was stale; a worker edits it to the outcome.

    Read after the refusal, so a decision that beat this press is seen. True when it was stale.
    """
    approval = Approval.objects.filter(pk=approval_id).first()
    if approval is None or approval.status == ApprovalStatus.PENDING:
        return False
    answers.show_outcome_later(approval.pk, channel, ts)
    return True


def _call(method: str, **arguments: Any) -> None:
    """The request's one Web API call (views.open), bounded; a failure is logged: nothing was decided by it."""
    try:
        client.interactive_client().api_call(method, json=arguments)
    except (SlackClientError, OSError):
        log.warning("Slack %s failed while answering an interaction", method, exc_info=True)


def _channel_of(payload: Press) -> str:
    return str((payload.get("channel") or {}).get("id") or (payload.get("container") or {}).get("channel_id") or "")


def _ts_of(payload: Press) -> str:
    return str((payload.get("container") or {}).get("message_ts") or (payload.get("message") or {}).get("ts") or "")
