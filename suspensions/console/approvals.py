"""The approver's pages (docs/decisions.md, "The approver's flow in the console"): the inbox, one approval, and the
decision.

The inbox's filters travel with the approver: from the inbox to an approval, into
the decision form, and on to the next approval of the same filter once decided.
A decision whose session ended on the way is never lost silently: nothing is
decided, and the approver comes back to the approval with the unsent reason.
An approval's policy (docs/policies.md) shows on the same page (console/policy.py): a vote
short of its quorum comes back to the approval, and edited arguments the call's
schema refuses come back next to their field, as typed, with nothing decided.
"""

from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from .. import replicas, selectors, services, timefmt
from ..approval_reads import find_approval
from ..exceptions import (
    ArgumentsInvalid,
    Forbidden,
    NotDelegated,
    NotFound,
    SeparationOfDuties,
    ServiceError,
    UnusableSchema,
)
from ..filters import InboxFilter
from ..models import Approval, ApprovalStatus, ApprovalVote, Role
from ..principals import Principal, principal_of
from ..services import delegations
from ..services.approval_checks import check_duties
from . import away, paging, policy, present, queries
from .access import staff_required
from .forms import AGE_CHOICES, EXPIRING_CHOICES, EXTEND_CHOICES, MAX_RESPONSE, MAX_TEXT, DecisionForm, ExtendForm

# What an approver reads when their decision did not go through (the service's code -> a sentence).
LOST = {
    "not_suspended": "Someone else already decided this approval.",
    "suspension_expired": "This approval expired before your decision.",
    "version_conflict": "The run moved on since you opened this page.",
    "admission_conflict": "Another approver already approved it.",
    "forbidden": "You do not hold the approver role in this approval's scope.",
    "not_found": "This approval no longer exists or is outside your scopes.",
    "not_an_approval": "This pause is not waiting for an approver.",
    "wrong_gate": "This approval belongs to a flow wait and is answered through its flow, not here.",
    "input_too_large": "The note is too long.",
    "invalid_request": "The decision form was incomplete; reload the page and try again.",
    "separation_of_duties": "You asked for this approval, so you cannot decide it: another approver must.",
    "not_delegated": "You hold no delegation that lets you decide this for that person now.",
    "vote_mismatch": "Your vote differs from the first vote's edits: approve exactly the same arguments or deny.",
    "not_editable": "That call's arguments may not be changed: approve it as asked, answer in words, or deny.",
    "arguments_invalid": "The edited arguments do not match the call's schema; nothing was decided.",
}

INBOX_FILTERS = ("agent_id", "tool", "scope", "tag", "older_than", "expiring_within", "at_risk")
# The inbox says "more than 1,000" rather than count a huge backlog to the last row.
COUNT_CAP = 1000
# Where a decision that arrived without a session waits for its approver to sign in again.
UNSENT = "console.unsent_decision"


def inbox_query(params: QueryDict) -> str:
    """The inbox filters in `params` as a query string: only known names, only non-empty values."""
    return urlencode([(k, params[k][:200]) for k in INBOX_FILTERS if params.get(k)])


def with_query(url: str, query: str) -> str:
    return f"{url}?{query}" if query else url


@require_GET
@staff_required
@replicas.lag_tolerant
def inbox(request: HttpRequest) -> HttpResponse:
    principal, now = principal_of(request), timezone.now()
    filterset = InboxFilter(request.GET, queryset=selectors.pending_approvals(principal).defer("continuation"))
    errors = [f"{field}: {' '.join(errs)}" for field, errs in filterset.errors.items()]
    # A filter that does not parse lists nothing, never every row under an error.
    rows: list[Any] = []
    more, count = False, 0
    if not errors:
        after = paging.deadline_cursor(request.GET["after"]) if request.GET.get("after") else None
        rows, more = paging.page(filterset.qs, after)
        paged = bool(request.GET.get("after"))
        # One page and no cursor: the rows are the count; otherwise one capped COUNT.
        count = len(rows) if not (more or paged) else filterset.qs.order_by()[: COUNT_CAP + 1].count()
    results, kept = bulk_results(request)
    context = {
        "nav": "inbox",
        "rows": [decidable(principal, s, present.inbox_row(s, now)) for s in rows],
        "bulk_results": results,
        "bulk_done": sum(1 for r in results if r.get("ok")),
        "kept_ids": set(kept.get("ids", [])),
        "kept_reason": str(kept.get("reason", ""))[:MAX_TEXT],
        "count": min(count, COUNT_CAP),
        "count_capped": count > COUNT_CAP,
        "next_link": paging.link(request.GET, f"{rows[-1].deadline.isoformat()}~{rows[-1].id}") if more else "",
        "paged": bool(request.GET.get("after")),
        "first_link": paging.link(request.GET),
        "filters": {k: request.GET.get(k, "") for k in INBOX_FILTERS},
        "filter_query": inbox_query(request.GET),
        "filter_errors": errors,
        "filtered": any(request.GET.get(k) for k in INBOX_FILTERS),
        "age_choices": AGE_CHOICES,
        "expiring_choices": EXPIRING_CHOICES,
        "scopes": principal.scopes_with(Role.APPROVER, Role.AUDITOR),
    }
    return render(request, "console/inbox.html", context)


def decidable(principal: Principal, susp: Any, row: dict[str, Any]) -> dict[str, Any]:
    """A row this user may select to decide with others: an approver of its scope, not a flow wait's."""
    row["decidable"] = principal.can(Role.APPROVER, susp.scope) and not susp.correlation_id
    return row


def bulk_results(request: HttpRequest) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """What the inbox shows once after deciding several (console/bulk.py): each one's result, or a refused form's
    selection and reason."""
    results = request.session.pop("console.bulk_results", None)
    kept = request.session.pop("console.bulk_kept", None)
    return (results if isinstance(results, list) else []), (kept if isinstance(kept, dict) else {})


@require_GET
@staff_required
def approval(request: HttpRequest, pk: UUID) -> HttpResponse:
    chosen = away.deciding(principal_of(request), pk, request.GET.get("acting_for", "")[:150])
    context = page_context(request, chosen.principal, pk, inbox_query(request.GET), acting=chosen)
    return render(request, "console/approval.html", context)


def page_context(
    request: HttpRequest,
    principal: Principal,
    pk: UUID,
    filters: str,
    kept: dict[str, Any] | None = None,
    acting: away.Deciding | None = None,
) -> dict[str, Any]:
    """The approval page; `kept` is an approve the page refused: the texts typed, the errors by call, the note;
    `acting`, whom the signed-in person may decide for (default: whom `principal` acts for, if anyone)."""
    now = timezone.now()
    try:
        body = find_approval(principal, pk).wire()
    except (Forbidden, NotFound) as exc:
        raise Http404("approval not found") from exc
    susp = selectors.suspensions(principal).filter(pk=pk).first()
    votes = list(selectors.approval_votes(principal, pk))
    own = policy.own_vote(votes, principal.person)
    # What was asked and how it was decided, from the kept record: it outlives the pause.
    shown = present.approval(body)
    context: dict[str, Any] = {
        "nav": "inbox",
        "approval": shown,
        "policy": policy.words(shown, own),
        "final_calls": policy.final_rows(shown),
        "timeline": queries.timeline(principal, body["run_id"]),
        "pause": pause_context(susp, now) if susp is not None else None,
        "filter_query": filters,
        "unsent": pop_unsent(request, pk),
    }
    if susp is not None and body["version"] is not None:
        record = queries.visible_approvals(principal).filter(pk=pk).first()
        context["extend"] = extend_context(principal, susp, now)
        context["decision"] = {
            **decision_context(principal, susp, body["version"], now),
            **policy_context(principal, record, shown, votes, own, kept, context["unsent"]),
            "acting": acting or away.Deciding(principal, (principal.acting_for or "").removeprefix("user:")),
        }
    return context


def pause_context(susp: Any, now: Any) -> dict[str, Any]:
    continuation = present.loads(susp.continuation)
    continuation = continuation if isinstance(continuation, dict) else {}
    prompt = continuation.get("system_prompt")
    return {
        "run": {"id": str(susp.run.id), "agent_id": susp.run.agent_id, "state": susp.run.state},
        "run_revision": susp.run.revision,
        "conversation": present.conversation(continuation),
        "system_prompt": prompt if isinstance(prompt, str) else present.pretty(prompt),
        "config": present.run_config(continuation),
        "deadline": present.countdown(susp.expires_at, now),
        "expires_at": susp.expires_at,
        "age": present.age(susp.created_at, now),
    }


def extend_context(principal: Principal, susp: Any, now: Any) -> dict[str, Any] | None:
    """The Extend form of a pending approval with a deadline still ahead, for an operator of its scope; else None."""
    if not principal.can(Role.OPERATOR, susp.scope) or susp.expires_at is None or susp.expires_at <= now:
        return None
    return {"choices": EXTEND_CHOICES}


def decision_context(principal: Principal, susp: Any, version: dict[str, Any], now: Any) -> dict[str, Any]:
    return {
        "allowed": principal.can(Role.APPROVER, susp.scope),
        "expired": susp.expires_at is not None and susp.expires_at <= now,
        # A flow wait is decided through its flow's gate with the decision token, never here.
        "gated": bool(susp.correlation_id),
        "version": version,
    }


def policy_context(
    principal: Principal,
    record: Approval | None,
    shown: dict[str, Any],
    votes: list[ApprovalVote],
    own: ApprovalVote | None,
    kept: dict[str, Any] | None,
    unsent: dict[str, str] | None,
) -> dict[str, Any]:
    """The policy's part of the decision panel: whether this person may decide, their vote, the edit fields."""
    if kept is not None:
        note = kept["reason"]
    elif unsent is not None and unsent.get("decision") == "approve":
        note = unsent.get("reason", "")
    else:
        # Their own vote's note again: submitting the same vote is a replay, not a mismatch.
        note = own.note if own is not None else ""
    fields = policy.edit_fields(shown, votes, kept and kept["texts"], kept and kept["errors"])
    return {
        "excluded": record is not None and excluded(principal, record),
        "mine": policy.vote_summary(own),
        "fields": fields,
        "refused": sum(1 for f in fields if f["errors"]),
        "note": note,
        "vote_number": len(votes) if own is not None else len(votes) + 1,
    }


def excluded(principal: Principal, record: Approval) -> bool:
    """Separation of duties, asked of the service's own rule, so the page and the decision always agree."""
    try:
        check_duties(principal, record)
    except SeparationOfDuties:
        return True
    return False


def pop_unsent(request: HttpRequest, pk: UUID) -> dict[str, str] | None:
    kept = request.session.get(UNSENT)
    if not isinstance(kept, dict) or kept.get("approval") != str(pk):
        return None
    del request.session[UNSENT]
    return kept


@require_http_methods(["GET", "POST"])
def decide(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Approve or deny with the version the page showed; every refusal becomes a message, never an error page.

    A GET (a sign-in's `next`, a reload, a bookmark) goes to the approval page. A POST
    without a session decides nothing: it keeps the unsent decision for the approval
    page and sends the approver to sign in, then back to that page.
    """
    filters = inbox_query(
        QueryDict(request.POST.get("filters", "")[:2000]) if request.method == "POST" else request.GET
    )
    page = with_query(reverse("console:approval", args=[pk]), filters)
    if request.method == "GET":
        return redirect(page)
    if not request.user.is_authenticated:
        decision = request.POST.get("decision", "")
        if decision == "respond":
            reason = request.POST.get("response", "")[:MAX_RESPONSE]
        else:
            reason = request.POST.get("reason", "")[:MAX_TEXT]
        request.session[UNSENT] = {"approval": str(pk), "decision": decision, "reason": reason}
        return redirect_to_login(page)
    return _decide(request, pk, filters, page)


@staff_required
def _decide(request: HttpRequest, pk: UUID, filters: str, page: str) -> HttpResponse:
    principal = principal_of(request)
    if asked := request.POST.get("acting_for", "")[:150]:
        page = away.deciding_url(pk, asked)
        try:  # checked again by services.decide, under the claim
            principal = delegations.acting(principal, asked, delegations.approval_scope(pk))
        except NotDelegated as exc:  # to where they find whom they stand in for now: this page may be closed to them
            messages.error(request, f"Nothing was decided: {exc.detail}.")
            return redirect("console:away")
    record = queries.visible_approvals(principal).filter(pk=pk).first()
    if record is None:
        raise Http404("approval not found")
    form = DecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(str(e) for errs in form.errors.values() for e in errs))
        return redirect(page)
    version = form.version()
    if version.suspension_id != record.suspension_id or version.run_id != record.run_id:
        messages.error(request, "This form does not belong to this approval; reload the page.")
        return redirect(page)
    data = form.cleaned_data
    calls: list[dict[str, str]] | None = None
    texts: dict[str, str] = {}
    if data["decision"] == "approve":
        calls, texts, errors = policy.edited_calls(record.pending, request.POST)
        if errors:
            return refused_edit(request, principal, pk, filters, {"texts": texts, "errors": errors, **data})
    # Where this approval stood in the inbox, read before a deny deletes the pause.
    deadline = selectors.suspensions(principal).filter(pk=pk).values_list("deadline", flat=True).first()
    try:
        decision = apply_decision(principal, pk, version, data, calls)
    except ArgumentsInvalid as exc:
        errors = policy.errors_by_call(exc.extra.get("errors"))
        return refused_edit(request, principal, pk, filters, {"texts": texts, "errors": errors, **data})
    except UnusableSchema as exc:
        # The schema, not the edit, is at fault: said next to the call's field, nothing decided.
        errors = {str(exc.extra.get("call_id")): [{"path": "", "message": exc.detail}]}
        return refused_edit(request, principal, pk, filters, {"texts": texts, "errors": errors, **data})
    except ServiceError as exc:
        messages.error(request, lost_message(principal, pk, exc))
        return redirect(page)
    text = outcome(decision, data["decision"], record.quorum)
    if isinstance(decision, services.Voted):
        # Short of the quorum: the approval still waits, and the approver sees their vote on it.
        messages.success(request, text)
        return redirect(page)
    following = next_approval(principal, QueryDict(filters), pk, deadline)
    if following is None:
        messages.success(request, f"{text} No other approval waits for you{' in this filter' if filters else ''}.")
        return redirect(with_query(reverse("console:inbox"), filters))
    messages.success(request, f"{text} Here is the next approval, by deadline.")
    return redirect(with_query(reverse("console:approval", args=[following]), filters))


@require_POST
@staff_required
def extend(request: HttpRequest, pk: UUID) -> HttpResponse:
    """An operator gives a pending approval more time, through the API's own service; back to the approval page."""
    principal = principal_of(request)
    filters = inbox_query(QueryDict(request.POST.get("filters", "")[:2000]))
    page = with_query(reverse("console:approval", args=[pk]), filters)
    if not queries.visible_approvals(principal).filter(pk=pk).exists():
        raise Http404("approval not found")
    form = ExtendForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(str(e) for errs in form.errors.values() for e in errs))
        return redirect(page)
    try:
        extended = services.extend_deadline(principal=principal, suspension_id=pk, **form.cleaned_data)
    except ServiceError as exc:
        messages.error(request, EXTEND_REFUSED.get(exc.code, exc.detail))
        return redirect(page)
    messages.success(request, f"Extended: the deadline is now {timefmt.absolute(extended.deadline)}.")
    return redirect(page)


# Why an extension did not go through (the service's code -> a sentence).
EXTEND_REFUSED = {
    "invalid_state": "This approval is no longer waiting, or its deadline has passed: it cannot be extended.",
    "forbidden": "You do not hold the operator role in this approval's scope.",
    "separation_of_duties": "You asked for this approval, so you cannot extend it: another operator must.",
    "person_required": "This approval's floor lets only a person extend it.",
    "not_found": "This approval no longer exists or is outside your scopes.",
}


def refused_edit(
    request: HttpRequest, principal: Principal, pk: UUID, filters: str, kept: dict[str, Any]
) -> HttpResponse:
    """The page again, nothing decided: each refused call's errors next to its field, every text as typed."""
    return render(request, "console/approval.html", page_context(request, principal, pk, filters, kept))


def apply_decision(
    principal: Principal,
    pk: UUID,
    version: services.Version,
    data: dict[str, Any],
    calls: list[dict[str, str]] | None,
) -> services.Decision:
    """The same service as the API's decide endpoint; the approver is the principal, never a form field."""
    return services.decide(
        principal=principal,
        suspension_id=pk,
        version=version,
        decision=data["decision"],
        reason=data["reason"],
        response=data["response"],
        calls=calls or None,
    )


def outcome(decision: services.Decision, kind: str, quorum: int) -> str:
    """What the approver reads after their decision went through (or replayed)."""
    if isinstance(decision, services.Denied):
        if not decision.fresh:
            return "You had already denied this; nothing changed."
        return f"Denied. The run failed with “rejected: {decision.reason}”."
    if isinstance(decision, services.Voted):
        left = decision.quorum - decision.votes
        waits = "another approver" if left == 1 else f"{left} more approvers"
        if not decision.fresh:
            return (
                f"You had already voted to approve this: your vote counts once and nothing changed "
                f"({decision.votes} of {decision.quorum}). The run waits for {waits}."
            )
        return f"Your vote is recorded: {decision.votes} of {decision.quorum}. The run waits for {waits}."
    if kind == "respond":
        if not decision.fresh:
            return "You had already answered this in words; nothing changed."
        return (
            f"Answered in words. The run is running at revision {decision.run.revision} and resumes with your answer."
        )
    if not decision.fresh:
        return "You had already approved this; nothing changed."
    reached = f" Yours was vote {quorum} of {quorum}." if quorum > 1 else ""
    return f"Approved.{reached} The run is running at revision {decision.run.revision} and waits for its engine."


def lost_message(principal: Principal, pk: UUID, exc: ServiceError) -> str:
    """Why the decision did not go through; "you already decided" when the record names this approver."""
    if principal.acting_for and exc.code in ("separation_of_duties", "vote_mismatch"):
        return exc.detail  # about the person acted for: the service's own sentence names them
    if exc.code == "vote_mismatch" and "first_voter" not in exc.extra:
        return "You already voted on this approval, with other arguments or another note: your first vote stands."
    if exc.code in ("not_suspended", "admission_conflict"):
        record = queries.visible_approvals(principal).filter(pk=pk).first()
        if record is not None and record.status != ApprovalStatus.PENDING and record.decided_by == principal.name:
            when = f" at {timefmt.absolute(record.resolved_at)}" if record.resolved_at else ""
            return f"You already decided this approval ({record.status}{when})."
    return LOST.get(exc.code, exc.title)


def next_approval(principal: Principal, filters: QueryDict, decided: UUID, deadline: Any) -> UUID | None:
    """The approval after the decided one in the inbox's order and filter (else the first), that this user can decide.

    Past deadlines and flow waits are skipped: neither can be decided here.
    """
    decidable = (
        selectors.pending_approvals(principal)
        .filter(principal.scope_q(Role.APPROVER), deadline__gt=timezone.now(), correlation_id="")
        .exclude(pk=decided)
    )
    filterset = InboxFilter(filters, queryset=decidable)
    if not filterset.is_valid():
        return None
    ids = filterset.qs.values_list("id", flat=True)
    later = ids.filter(paging.after_deadline(deadline, decided)).first() if deadline is not None else None
    return later or ids.first()
