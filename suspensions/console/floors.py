"""Approval floors in the console (issue 32 item 5, docs/policies.md "Floors"): for operators only.

The pages call the same services as the API (services/approval_floors.py)
and read the same presenter. Every POST that goes through redirects with a
message; a refused one renders the form again (400) with the service's
errors next to their fields, having written nothing.
"""

from typing import Any
from uuid import UUID

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from .. import floors, selectors
from ..exceptions import NotFound, ServiceError
from ..models import ApprovalFloor, Role
from ..principals import principal_of
from ..services import approval_floors
from ..wire.answers_operators import ApprovalFloorOut
from . import paging
from .access import operator_only
from .forms import refused_into

NAV = "floors"
ON_EXPIRY_WORDS = {
    "expire": "expire: the run expires",
    "deny": "deny: the run fails as denied",
    "escalate": "escalate: the deadline moves once and the parent scope's approvers are asked",
}


# A staff user who is an operator nowhere gets a 403 page: floors are the operators' configuration.
operator_required = operator_only(NAV)


class FloorForm(forms.Form):
    quorum = forms.TypedChoiceField(
        choices=[(n, str(n)) for n in range(1, 6)], coerce=int, help_text="The fewest distinct approvers."
    )
    exclude_requester = forms.BooleanField(
        required=False, label="Separation of duties", help_text="Whoever asked may never decide, under any sign-in."
    )
    on_expiry = forms.MultipleChoiceField(
        label="Allowed at the deadline",
        choices=[(v, ON_EXPIRY_WORDS[v]) for v in floors.ON_EXPIRY],
        widget=forms.CheckboxSelectMultiple,
        help_text="A pause naming another value is refused; one naming none gets the first of expire, deny allowed.",
    )
    require_linked_person = forms.BooleanField(
        required=False,
        label="People only",
        help_text="Only a user, or a token linked to one, may decide: an unlinked token is refused.",
    )
    require_escalation = forms.BooleanField(
        required=False,
        label="Escalation chain required",
        help_text="A pause without `approval.escalation` steps is refused: someone is asked before the deadline.",
    )


class NewFloorForm(FloorForm):
    scope = forms.ChoiceField(help_text="The floor covers this scope and every scope below it.")

    field_order = ["scope"]

    def __init__(self, *args: Any, scopes: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"].choices = [(s, s) for s in scopes]  # type: ignore[attr-defined]


def floor_row(floor: ApprovalFloor) -> dict[str, Any]:
    return {**ApprovalFloorOut.of(floor).wire(), "created": floor.created_at, "updated": floor.updated_at}


# -- pages -------------------------------------------------------------------------------------


@require_GET
@operator_required
def floor_list(request: HttpRequest) -> HttpResponse:
    queryset = selectors.approval_floors(principal_of(request)).order_by("-id")
    after = paging.id_cursor(request.GET["after"]) if request.GET.get("after") else None
    rows, more = paging.page(queryset, after)
    context = {
        "nav": NAV,
        "rows": [floor_row(f) for f in rows],
        "next_link": paging.link(request.GET, str(rows[-1].id)) if more else "",
        "paged": bool(request.GET.get("after")),
        "first_link": paging.link(request.GET),
    }
    return render(request, "console/floors.html", context)


@require_http_methods(["GET", "POST"])
@operator_required
def new_floor(request: HttpRequest) -> HttpResponse:
    principal = principal_of(request)
    scopes = principal.scopes_with(Role.OPERATOR)
    if request.method == "GET":
        initial = {**approval_floors.DEFAULTS}
        form = NewFloorForm(scopes=scopes, initial=initial)
        return render(request, "console/floor_form.html", {"nav": NAV, "form": form})
    form = NewFloorForm(request.POST, scopes=scopes)
    if form.is_valid():
        try:
            approval_floors.create_floor(principal=principal, **form.cleaned_data)
        except ServiceError as exc:
            refused_into(form, exc)
        else:
            messages.success(request, f"Floor set on {form.cleaned_data['scope']}. New pauses there meet it.")
            return redirect("console:floors")
    return render(request, "console/floor_form.html", {"nav": NAV, "form": form}, status=400)


@require_http_methods(["GET", "POST"])
@operator_required
def edit_floor(request: HttpRequest, pk: UUID) -> HttpResponse:
    principal = principal_of(request)
    found = visible(principal, pk)
    context: dict[str, Any] = {"nav": NAV, "floor": floor_row(found)}
    if request.method == "GET":
        form = FloorForm(initial={f: getattr(found, f) for f in approval_floors.FIELDS})
        return render(request, "console/floor_form.html", {**context, "form": form})
    form = FloorForm(request.POST)
    if form.is_valid():
        try:
            approval_floors.update_floor(principal=principal, floor_id=pk, **form.cleaned_data)
        except NotFound:
            raise Http404("floor not found") from None
        except ServiceError as exc:
            refused_into(form, exc)
        else:
            messages.success(request, f"Floor of {found.scope} changed. Pauses stored before keep their policy.")
            return redirect("console:floors")
    return render(request, "console/floor_form.html", {**context, "form": form}, status=400)


@require_POST
@operator_required
def delete_floor(request: HttpRequest, pk: UUID) -> HttpResponse:
    try:
        found = approval_floors.delete_floor(principal=principal_of(request), floor_id=pk)
    except NotFound:
        raise Http404("floor not found") from None
    messages.success(request, f"Floor of {found.scope} deleted. Pauses stored under it keep their policy.")
    return redirect("console:floors")


def visible(principal: Any, pk: UUID) -> ApprovalFloor:
    try:
        return approval_floors.floor_of(principal, pk)
    except NotFound:
        raise Http404("floor not found") from None
