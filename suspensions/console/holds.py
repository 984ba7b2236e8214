"""Legal holds in the console (docs/auditors.md, "Retention and legal holds"): for auditors and operators.

One page lists the holds of the user's auditor and operator scopes, the last pruning passes, and the form of a
new hold; each active hold has a Release button. The pages call the same service as the API
(services/retention.py); every POST redirects (post/redirect/get), with a message.
"""

from uuid import UUID

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from .. import selectors
from ..exceptions import InvalidState, NotFound, ServiceError
from ..models import AuditPrune
from ..principals import principal_of
from ..services import retention
from ..wire.answers_operators import LegalHoldOut
from .access import staff_required
from .forms import refused_into

PRUNES_SHOWN = 10


class HoldForm(forms.Form):
    scope = forms.CharField(required=False, help_text="Hold every run of this scope and below it.")
    run = forms.UUIDField(required=False, help_text="Or hold one run (its id).")
    reason = forms.CharField(max_length=retention.MAX_REASON, help_text="A case, a request, an investigation.")


def _may_see(request: HttpRequest) -> bool:
    principal = principal_of(request)
    return principal.superuser or bool(principal.scopes_with(*retention.HOLDERS))


@require_http_methods(["GET", "POST"])
@staff_required
def hold_list(request: HttpRequest) -> HttpResponse:
    """The holds (newest first), the last pruning passes, and the new-hold form (its POST creates one)."""
    if not _may_see(request):
        return render(request, "console/holds.html", {"nav": "holds", "refused": True}, status=403)
    principal = principal_of(request)
    form = HoldForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            retention.create_hold(
                principal=principal, scope=data["scope"] or None, run_id=data["run"], reason=data["reason"]
            )
        except ServiceError as exc:
            refused_into(form, exc)
        else:
            messages.success(request, "Hold created: its events are kept past the retention.")
            return redirect("console:holds")
    context = {
        "nav": "holds",
        "rows": [LegalHoldOut.of(h).wire() for h in selectors.legal_holds(principal)[:200]],
        "prunes": list(AuditPrune.objects.order_by("-id")[:PRUNES_SHOWN]),
        "retention_days": settings.AUDIT_RETENTION_DAYS,
        "form": form,
    }
    return render(request, "console/holds.html", context, status=400 if form.errors else 200)


@require_POST
@staff_required
def release(request: HttpRequest, pk: UUID) -> HttpResponse:
    try:
        retention.release_hold(principal=principal_of(request), hold_id=pk)
    except (NotFound, ServiceError) as exc:
        if not isinstance(exc, InvalidState):
            raise Http404("hold not found") from None
        messages.error(request, exc.detail)
    else:
        messages.success(request, "Hold released: the next pruning may drop what it kept.")
    return redirect("console:holds")
