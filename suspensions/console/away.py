"""The "Away" page and deciding for someone (docs/console.md, "Delegation"; docs/identity.md, "Delegation").

A person says who decides for them while they are away, where, and until
when; the page lists the delegations they gave and hold (and, for an
operator, those of their scopes), each with an End button while it may
still hold. A delegate sees there the approvals waiting for the people they
stand in for, each opening on the approval page with "Deciding for" chosen.

Every write is the API's service (services/delegations.py): a refused form
comes back with the service's errors next to their fields, nothing written.
"""

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from .. import selectors
from ..exceptions import NotDelegated, NotFound, ServiceError
from ..models import Delegation, Role
from ..principals import Principal, principal_of
from ..services import delegations
from ..wire.answers_operators import DelegationOut
from .access import staff_required
from .forms import refused_into

NAV = "away"
# The pending approvals listed per person stood in for: the inbox is the place for more.
WAITING = 20


class AwayForm(forms.Form):
    to = forms.CharField(max_length=150, label="My delegate", help_text="Their username: an active console user.")
    scope = forms.ChoiceField(help_text="This scope and every scope under it.")
    starts_at = forms.DateTimeField(
        required=False,
        label="Away from",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="Left empty: now.",
    )
    ends_at = forms.DateTimeField(label="Back on", widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    reason = forms.CharField(max_length=500, required=False, help_text="Shown to your delegate.")
    from_ = forms.CharField(
        max_length=150,
        required=False,
        label="For someone else",
        help_text="Operators only: the username of who is away. Left empty: you.",
    )

    def __init__(self, *args: Any, scopes: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"].choices = [(s, s) for s in scopes]  # type: ignore[attr-defined]


def scopes_to_delegate(principal: Principal) -> list[str]:
    return sorted(set(principal.scopes_with(Role.APPROVER, Role.OPERATOR)))


def row(d: Delegation, principal: Principal, now: Any) -> dict[str, Any]:
    shown = DelegationOut.of(d, now).wire()
    mine = principal.user_id in (d.from_user_id, d.to_user_id)
    may_end = d.ended_at is None and d.ends_at > now and (mine or principal.can(Role.OPERATOR, d.scope))
    return {**shown, "starts": d.starts_at, "ends": d.ends_at, "ended": d.ended_at, "may_end": may_end}


def waiting(principal: Principal, now: Any) -> list[dict[str, Any]]:
    """For each person the principal stands in for now: the approvals waiting in the delegated scopes."""
    held = Delegation.objects.filter(delegations.active(now), to_user_id=principal.user_id)
    names = sorted({d.from_user.get_username() for d in held.select_related("from_user")})
    found = []
    for name in names:
        try:
            acting = delegations.acting(principal, name)
        except NotDelegated:  # ended between the two reads
            continue
        pending = selectors.pending_approvals(acting).select_related("run").order_by("deadline", "id")[:WAITING]
        found.append({"name": name, "approvals": list(pending)})
    return found


@require_http_methods(["GET", "POST"])
@staff_required
def away(request: HttpRequest) -> HttpResponse:
    principal, now = principal_of(request), timezone.now()
    form = AwayForm(request.POST or None, scopes=scopes_to_delegate(principal))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            made = delegations.create_delegation(
                principal=principal,
                from_=data["from_"] or None,
                to=data["to"],
                scope=data["scope"],
                starts_at=data["starts_at"],
                ends_at=data["ends_at"],
                reason=data["reason"],
            )
        except ServiceError as exc:
            refused_into(form, exc)
        else:
            messages.success(request, f"{made.to_user.get_username()} decides for you in {made.scope} until then.")
            return redirect("console:away")
    rows = delegations.delegations(principal).order_by("-created_at", "-id")[:100]
    context = {
        "nav": NAV,
        "form": form,
        "rows": [row(d, principal, now) for d in rows],
        "waiting": waiting(principal, now) if principal.user_id else [],
        "operator": bool(principal.scopes_with(Role.OPERATOR)),
        "now": now,
    }
    return render(request, "console/away.html", context, status=400 if form.errors else 200)


@require_POST
@staff_required
def end(request: HttpRequest, pk: UUID) -> HttpResponse:
    try:
        ended = delegations.end_delegation(principal=principal_of(request), delegation_id=pk)
    except NotFound:
        raise Http404("delegation not found") from None
    except ServiceError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, f"Ended: {ended.to_user.get_username()} no longer decides for {ended.from_user}.")
    return redirect("console:away")


# -- deciding for someone, on the approval page -----------------------------------------------------


@dataclass(frozen=True)
class Deciding:
    """Who decides on an approval page: the signed-in person, or a principal acting for someone they stand in for."""

    principal: Principal
    chosen: str = ""
    names: list[str] = field(default_factory=list)
    self_allowed: bool = True


def deciding(principal: Principal, pk: UUID, asked: str) -> Deciding:
    """The page's principal: acting for `asked` when the signed-in person may, else themselves; with no choice
    asked, acting for the one person they stand in for when they cannot see the approval themselves.

    The choice is offered, never trusted: the decision goes through services.decide, which checks it again.
    """
    scope = delegations.approval_scope(pk)
    if scope is None or principal.user_id is None:
        return Deciding(principal)
    names = delegations.delegators_for(principal, scope, timezone.now())
    self_allowed = principal.can(Role.APPROVER, scope)
    chosen = asked if asked in names else ""
    if not chosen and not principal.sees(scope) and names:
        chosen = names[0]
    if not chosen:
        return Deciding(principal, "", names, self_allowed)
    return Deciding(delegations.acting(principal, chosen, scope), chosen, names, self_allowed)


def deciding_url(pk: UUID, name: str) -> str:
    return f"{reverse('console:approval', args=[pk])}?acting_for={name}"
