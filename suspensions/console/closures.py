"""T10 in the console: an operator closes an uncertain start with a proof, and reads the receipt.

The form carries the version, digests and revision the page showed, so a page
rendered before the run moved on can never close a later execution; the actor
is the logged-in user, never a form field. Every refusal of the service comes
back as a message on the form, never an error page.
"""

import json
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo, available_timezones

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_http_methods

from .. import digests, selectors, services
from ..exceptions import InvalidRequest, NotFound, ServiceError
from ..models import Admission, Role
from ..principals import Principal, principal_of
from ..wire.answers import ClosureReceiptOut
from .access import staff_required

# What an operator reads when the closure did not go through (the service's code -> a sentence).
REFUSED = {
    "version_conflict": "The run moved on since this page was rendered (a newer admission, start or revision). "
    "Reload the page and check the run again.",
    "invalid_state": "This run is no longer an uncertain start: it finished, paused again, or never started.",
    "closure_conflict": "This start was already closed with a different request.",
    "forbidden": "You do not hold the operator role in this run's scope.",
    "not_found": "This run no longer exists or is outside your scopes.",
    "invalid_request": "The closure was refused: check the proof fields below.",
}
# A proof is usually good for a while; the operator shortens or lengthens it to what the proof says.
DEFAULT_VALIDITY = timedelta(hours=1)
OUT_OF_RANGE = "The time falls outside years 1 to 9999 in UTC."


@cache
def zone_choices() -> list[tuple[str, str]]:
    return [("UTC", "UTC")] + [(z, z.replace("_", " ")) for z in sorted(available_timezones() - {"UTC"})]


def wall_clock(moment: datetime) -> str:
    """What <input type="datetime-local" step="1"> shows: the UTC wall-clock time to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


class ProofTimeField(forms.CharField):
    """A wall-clock time as <input type="datetime-local"> sends it, or RFC 3339 with an offset.

    A time without an offset stays naive here: the form reads it in the chosen time zone (clean()).
    """

    widget = forms.TextInput(attrs={"type": "datetime-local", "step": "1"})

    def to_python(self, value: Any) -> datetime | None:  # type: ignore[override]
        text = super().to_python(value)
        if not text:
            return None
        try:
            parsed = parse_datetime(text)
        except ValueError:
            parsed = None
        if parsed is None:
            raise forms.ValidationError("Not a time: pick a date and time, e.g. 2026-01-01 12:00:00.")
        if parsed.tzinfo is None:
            return parsed
        moment = digests.utc_or_none(parsed)
        if moment is None:
            raise forms.ValidationError(OUT_OF_RANGE)
        return moment


class ClosureForm(forms.Form):
    """The closure request (docs/api.md, "7.6 Closure of an uncertain start"); the hidden fields are what the page
    showed."""

    suspension_id = forms.UUIDField(widget=forms.HiddenInput)
    version_revision = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    admission_digest = forms.CharField(validators=[digests.HEX_SHA256], widget=forms.HiddenInput)
    start_digest = forms.CharField(validators=[digests.HEX_SHA256], widget=forms.HiddenInput)
    run_revision = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    issuer = forms.CharField(
        max_length=200,
        help_text="Who says the worker has stopped: the system or person whose statement is your proof, "
        "e.g. cluster-controller or your own name.",
    )
    issuer_revision = forms.CharField(
        max_length=200,
        label="Issuer revision",
        help_text="Which version of that issuer made the statement (its key id, configuration or release), "
        "so the proof can be checked later.",
    )
    proof_ref = forms.CharField(
        max_length=2000,
        label="Proof reference",
        help_text="Where someone can find the proof later: a URL, a ticket, a log query or a file path.",
    )
    proof_digest = forms.CharField(
        label="Proof digest",
        help_text="The SHA-256 of the proof document, 64 hex characters (sha256sum proof.txt): "
        "the receipt pins exactly that proof.",
    )
    observed_at = ProofTimeField(
        label="Observed at",
        help_text="When the worker was seen stopped. Filled in with now; it cannot be in the future.",
    )
    expires_at = ProofTimeField(
        label="Valid until",
        help_text="Until when the proof can be trusted: after it the worker could be back (a rescheduled pod, "
        "a restarted host), so a closure filed later is refused. Filled in with one hour from now.",
    )
    time_zone = forms.ChoiceField(
        required=False,
        choices=zone_choices,
        label="Time zone",
        help_text="The zone of the two times above; the receipt records them in UTC.",
    )

    def __init__(self, *args: Any, now: datetime | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if now is not None:
            # What the server knows: the observation is now, in UTC, which the zone defaults to.
            self.initial.update(
                observed_at=wall_clock(now), expires_at=wall_clock(now + DEFAULT_VALIDITY), time_zone="UTC"
            )
            # closure.js shows these in the browser's zone; data-utc is the moment it converts.
            self.fields["observed_at"].widget.attrs["data-utc"] = digests.rfc3339(now)
            self.fields["expires_at"].widget.attrs["data-utc"] = digests.rfc3339(now + DEFAULT_VALIDITY)

    def clean_proof_digest(self) -> str:
        value = self.cleaned_data["proof_digest"].strip().lower()
        digests.HEX_SHA256(value)
        return value

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        zone = ZoneInfo(data.get("time_zone") or "UTC")
        for name in ("observed_at", "expires_at"):
            moment = data.get(name)
            if moment is not None and moment.tzinfo is None:
                self._to_utc(name, moment.replace(tzinfo=zone))
        observed, expires = data.get("observed_at"), data.get("expires_at")
        if observed and expires and expires <= observed:
            self.add_error("expires_at", "Must be after the observation time.")
        return data

    def _to_utc(self, name: str, moment: datetime) -> None:
        found = digests.utc_or_none(moment)
        if found is None:
            self.add_error(name, OUT_OF_RANGE)  # also drops the field from cleaned_data
        else:
            self.cleaned_data[name] = found

    def closure_request(self, run_id: UUID) -> services.ClosureRequest:
        data = self.cleaned_data
        version = services.Version(
            run_id=run_id, suspension_id=data["suspension_id"], run_revision=data["version_revision"]
        )
        fields = ("admission_digest", "start_digest", "run_revision", "issuer", "issuer_revision", "proof_ref")
        return services.ClosureRequest(
            schema_version=services.closure.SCHEMA_VERSION,
            version=version,
            proof_digest=data["proof_digest"],
            observed_at=data["observed_at"],
            expires_at=data["expires_at"],
            **{name: data[name] for name in fields},
        )


def uncertain_start(principal: Principal, run_id: UUID) -> dict[str, Any]:
    """The run and, when it is an uncertain start, the version and digests a closure must bind."""
    run = selectors.runs(principal).filter(pk=run_id).first()
    if run is None:
        raise Http404("run not found")
    latest, start = selectors.latest_admission(principal, run.id, with_input=False)
    closable = selectors.is_uncertain_start(run, latest, start)
    return {
        "run": {"id": str(run.id), "agent_id": run.agent_id, "scope": run.scope, "state": run.state},
        "run_revision": run.revision,
        "closable": closable,
        "may_close": principal.can(Role.OPERATOR, run.scope),
        "admission": _admission(latest) if latest else None,
        "start": {"digest": start.digest, "started_at": start.started_at, "actor": start.actor} if start else None,
    }


def _admission(a: Admission) -> dict[str, Any]:
    return {
        "suspension_id": str(a.suspension_id),
        "version_revision": a.version_revision,
        "request_digest": a.request_digest,
        "source": a.source,
        "state": a.state,
        "actor": a.actor,
    }


def initial(shown: dict[str, Any]) -> dict[str, Any]:
    admission, start = shown["admission"], shown["start"]
    return {
        "suspension_id": admission["suspension_id"],
        "version_revision": admission["version_revision"],
        "admission_digest": admission["request_digest"],
        "start_digest": start["digest"],
        "run_revision": shown["run_revision"],
    }


def _refused(request: HttpRequest, form: ClosureForm, exc: ServiceError) -> None:
    messages.error(request, REFUSED.get(exc.code, exc.title))
    errors = exc.extra.get("errors") if isinstance(exc, InvalidRequest) else None
    for field, problems in (errors or {}).items():
        form.add_error(field if field in form.fields else None, " ".join(map(str, problems)))


@require_http_methods(["GET", "POST"])
@staff_required
def close(request: HttpRequest, pk: UUID) -> HttpResponse:
    principal = principal_of(request)
    shown = uncertain_start(principal, pk)
    if request.method == "GET":
        form = ClosureForm(initial=initial(shown), now=services.db_now()) if shown["closable"] else None
        return render(request, "console/closure_form.html", {"nav": "uncertain", **shown, "form": form})
    form = ClosureForm(request.POST)
    status = 400
    if form.is_valid():
        try:
            closed = services.close_run(principal=principal, run_id=pk, request=form.closure_request(pk))
        except ServiceError as exc:
            _refused(request, form, exc)
            status = exc.status
        else:
            if closed.fresh:
                messages.success(request, f"Closed. The run is incomplete at revision {closed.receipt.run_revision}.")
            else:
                messages.info(request, "This closure was already recorded; nothing changed.")
            return redirect("console:closure", pk=pk, suspension_id=closed.receipt.suspension_id)
    # A run that is no longer an uncertain start gets no form to resubmit, only the message.
    context = {"nav": "uncertain", **shown, "form": form if shown["closable"] else None}
    return render(request, "console/closure_form.html", context, status=status)


@require_http_methods(["GET"])
@staff_required
def receipt(request: HttpRequest, pk: UUID, suspension_id: UUID) -> HttpResponse:
    try:
        found = services.closure_of(principal=principal_of(request), run_id=pk, suspension_id=suspension_id)
    except NotFound:
        raise Http404("closure not found") from None
    body = ClosureReceiptOut.of(found, fresh=False).wire()
    context = {
        "nav": "uncertain",
        "receipt": body,
        "closed_at": found.closed_at,
        "request_pretty": json.dumps(body["request"], indent=2, ensure_ascii=False, sort_keys=True),
    }
    return render(request, "console/closure_receipt.html", context)
