"""An approval policy's escalation chain (docs/policies.md, "Escalation chains"), declared once: `approval.escalation`
of a suspend body is a list of these steps; what depends on the pause (each step before its deadline, each scope on
its path) is checked by the suspend's door (policies.escalation_problems), and its refusals keep the same paths."""

from typing import Annotated, Self

from pydantic import AfterValidator, Field, model_validator

from .. import policies, scopes
from .base import MAX_TTL, MISSING, Body, Shown, Text, given, refuse


def _scopes(value: list[str]) -> list[str]:
    bad = [s for s in value if not scopes.is_valid(s)]
    if bad:
        refuse(f"Not a valid scope: {', '.join(bad)}.")
    return value


Name = Annotated[Shown, Field(max_length=150)]


class EscalationNotify(Body):
    """Whom an escalation step asks: at least one name in one list."""

    scopes: Annotated[list[Annotated[Text, Field(max_length=192)]], Field(max_length=20), AfterValidator(_scopes)] | (
        MISSING
    ) = Field(
        MISSING,
        description="The approvers of these scopes (the pause's own or one above it) and their notification routes.",
    )
    groups: Annotated[list[Name], Field(max_length=20)] | MISSING = Field(
        MISSING, description="The approvers of the pause's scope in these user groups."
    )
    people: Annotated[list[Name], Field(max_length=50)] | MISSING = Field(
        MISSING, description="The approvers of the pause's scope with these usernames."
    )

    @model_validator(mode="after")
    def _someone(self) -> Self:
        if not any(given(getattr(self, key), []) for key in policies.NOTIFY_KEYS):
            refuse("Name at least one scope, group or person.")
        return self


class EscalationStep(Body):
    after_seconds: Annotated[int, Field(ge=1, le=MAX_TTL)] = Field(
        description="Seconds after the pause was stored; before its deadline."
    )
    notify: EscalationNotify


def _ordered(steps: list[EscalationStep]) -> list[EscalationStep]:
    for index in range(1, len(steps)):
        if steps[index].after_seconds <= steps[index - 1].after_seconds:
            refuse("Must be greater than the step before's.", index, "after_seconds")
    return steps


# At most MAX_ESCALATION_STEPS steps, after_seconds strictly increasing.
Chain = Annotated[list[EscalationStep], Field(max_length=policies.MAX_ESCALATION_STEPS), AfterValidator(_ordered)]
CHAIN_HELP = (
    "An escalation chain: up to 10 steps `{after_seconds, notify}`, after_seconds strictly increasing, each run once "
    "by the sweep before the deadline."
)
