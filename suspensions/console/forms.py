"""Console forms. The decision form carries the claim version the page was rendered with."""

from typing import Any
from uuid import UUID

from django import forms

from .. import services
from ..exceptions import ServiceError

# (seconds, label) for the inbox's age and deadline filters; the values go to InboxFilter as given.
# Short labels: each select sits under its field's label ("Waiting", "Deadline") in a narrow column.
AGE_CHOICES = [("", "Any age"), ("300", "Over 5 min"), ("3600", "Over 1 h"), ("86400", "Over 1 day")]
EXPIRING_CHOICES = [
    ("", "Any deadline"),
    ("300", "Within 5 min"),
    ("900", "Within 15 min"),
    ("3600", "Within 1 h"),
    ("86400", "Within 1 day"),
]

# (seconds, label) an operator may add to a pending approval's deadline (docs/console.md).
EXTEND_CHOICES = [("900", "15 minutes"), ("3600", "1 hour"), ("14400", "4 hours"), ("86400", "1 day")]

MAX_TEXT = 4000
# An answer in words and a call's edited arguments may be longer than a note.
MAX_RESPONSE = 20_000
MAX_ARGUMENTS = 100_000


def refused_into(form: forms.Form, exc: ServiceError) -> None:
    """The service's errors next to their fields (the rest above the form)."""
    for field, problems in (exc.extra.get("errors") or {"__all__": [exc.detail]}).items():
        form.add_error(field if field in form.fields else None, " ".join(map(str, problems)))


class DecisionForm(forms.Form):
    """Approve (note optional), respond (words required) or deny (reason required) the pause of the hidden version.

    An approve's edited arguments are not fields here: they are named after the calls
    (`arguments:<call id>`) and read by `policy.edited_calls`.
    """

    run_id = forms.UUIDField(widget=forms.HiddenInput)
    suspension_id = forms.UUIDField(widget=forms.HiddenInput)
    run_revision = forms.IntegerField(min_value=1, max_value=2**63 - 1, widget=forms.HiddenInput)
    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("deny", "Deny"), ("respond", "Respond")])
    reason = forms.CharField(required=False, max_length=MAX_TEXT, strip=True)
    response = forms.CharField(required=False, max_length=MAX_RESPONSE, strip=True)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("decision") == "deny" and not data.get("reason"):
            self.add_error("reason", "A denial needs a reason.")
        if data.get("decision") == "respond" and not data.get("response"):
            self.add_error("response", "An answer in words needs words.")
        return data

    def version(self) -> services.Version:
        data = self.cleaned_data
        return services.Version(
            run_id=data["run_id"], suspension_id=data["suspension_id"], run_revision=data["run_revision"]
        )


# At most as many approvals in one form as the API takes in one list:
# (docs/api.md, "`POST /approvals/decide`: a list of decisions").
MAX_SELECTED = 100


class BulkDecisionForm(forms.Form):
    """Approve, or deny with one reason, the inbox rows selected (`approval`, repeated), each with the version its
    row showed (`version-<id>`: "<run id>:<run revision>")."""

    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("deny", "Deny")])
    reason = forms.CharField(required=False, max_length=MAX_TEXT, strip=True)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("decision") == "deny" and not data.get("reason"):
            self.add_error("reason", "A denial needs a reason.")
        ids = self.data.getlist("approval") if hasattr(self.data, "getlist") else []
        if not ids:
            raise forms.ValidationError("Select at least one approval.")
        if len(ids) > MAX_SELECTED:
            raise forms.ValidationError(f"Select at most {MAX_SELECTED} approvals at once.")
        try:
            data["versions"] = [self.version_of(UUID(pk)) for pk in dict.fromkeys(ids)]
        except (ValueError, TypeError):
            raise forms.ValidationError("The inbox page was out of date; reload it and select again.") from None
        return data

    def version_of(self, pk: UUID) -> tuple[UUID, services.Version]:
        run_id, _, revision = str(self.data.get(f"version-{pk}", "")).partition(":")
        run_revision = int(revision)
        if not 1 <= run_revision < 2**63:
            raise ValueError(revision)
        return pk, services.Version(run_id=UUID(run_id), suspension_id=pk, run_revision=run_revision)

    def versions(self) -> list[tuple[UUID, services.Version]]:
        return self.cleaned_data["versions"]  # type: ignore[no-any-return]


class ExtendForm(forms.Form):
    """More time for a pending approval: one of EXTEND_CHOICES, and why (docs/api.md, "`POST /suspensions/{id}/extend`
    — more time")."""

    seconds = forms.TypedChoiceField(choices=EXTEND_CHOICES, coerce=int)
    reason = forms.CharField(max_length=1000, strip=True, error_messages={"required": "Say why it needs more time."})
