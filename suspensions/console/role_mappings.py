"""Role mappings in the console (docs/identity.md, "How roles map"): for operators only.

One page lists the mappings of the operator's scopes, the latest role changes
there, and holds the form of a new mapping. The page calls the same service
as the API and the admin (services/role_mappings.py); every POST redirects
(post/redirect/get) with a message, and a refused one renders the form again
(400) with the service's errors next to their fields, having written nothing.
"""

from typing import Any
from uuid import UUID

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from .. import selectors
from ..exceptions import NotFound, ServiceError
from ..models import Role
from ..principals import principal_of
from ..services import role_mappings
from ..wire.identity import RoleChangeOut, RoleMappingOut
from .access import operator_only
from .forms import refused_into

NAV = "role_mappings"
operator_required = operator_only(NAV)
SHOWN = 200  # rows of each list on the page; the API and the admin page through the rest


class MappingForm(forms.Form):
    group = forms.CharField(
        max_length=role_mappings.MAX_GROUP, help_text="The group's name as your identity provider sends it."
    )
    scope = forms.ChoiceField(help_text="Its members get the role in this scope and every scope below it.")
    role = forms.ChoiceField(choices=[(r, r) for r in role_mappings.MAPPABLE])

    def __init__(self, *args: Any, scopes: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"].choices = [(s, s) for s in scopes]  # type: ignore[attr-defined]


@require_http_methods(["GET", "POST"])
@operator_required
def mapping_list(request: HttpRequest) -> HttpResponse:
    """The mappings (newest first), the latest role changes, and the new-mapping form (its POST creates one)."""
    principal = principal_of(request)
    form = MappingForm(request.POST or None, scopes=principal.scopes_with(Role.OPERATOR))
    if request.method == "POST" and form.is_valid():
        try:
            role_mappings.create_mapping(principal=principal, **form.cleaned_data)
        except ServiceError as exc:
            refused_into(form, exc)
        else:
            messages.success(request, "Mapping created. Members get the role at their next sign-in.")
            return redirect("console:role_mappings")
    context = {
        "nav": NAV,
        "rows": [RoleMappingOut.of(m).wire() for m in selectors.role_mappings(principal)[:SHOWN]],
        "changes": [RoleChangeOut.of(c) for c in selectors.role_changes(principal)[:SHOWN]],
        "form": form,
    }
    return render(request, "console/role_mappings.html", context, status=400 if request.method == "POST" else 200)


@require_POST
@operator_required
def delete_mapping(request: HttpRequest, pk: UUID) -> HttpResponse:
    try:
        found = role_mappings.delete_mapping(principal=principal_of(request), mapping_id=pk)
    except NotFound:
        raise Http404("role mapping not found") from None
    messages.success(request, f"Mapping of {found.group} deleted. Members lose the role at their next sign-in.")
    return redirect("console:role_mappings")
