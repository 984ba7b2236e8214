"""Console forms. The decision form carries the claim version the page was rendered with."""

from typing import Any

from django import forms

from .. import services

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

MAX_TEXT = 4000


class DecisionForm(forms.Form):
    """Approve (note optional) or deny (reason required) the pause named by the hidden version."""

    run_id = forms.UUIDField(widget=forms.HiddenInput)
    suspension_id = forms.UUIDField(widget=forms.HiddenInput)
    run_revision = forms.IntegerField(min_value=1, max_value=2**63 - 1, widget=forms.HiddenInput)
    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("deny", "Deny")])
    reason = forms.CharField(required=False, max_length=MAX_TEXT, strip=True)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("decision") == "deny" and not data.get("reason"):
            self.add_error("reason", "A denial needs a reason.")
        return data

    def version(self) -> services.Version:
        data = self.cleaned_data
        return services.Version(
            run_id=data["run_id"], suspension_id=data["suspension_id"], run_revision=data["run_revision"]
        )
