"""Waiting without webhooks (docs/api.md, "Waiting without webhooks"): the long poll on a run and the event stream.

Both are Django async views (api/waits.py), which drf-spectacular does not list: api/schema.py adds them with the
words, parameters and examples below.
"""

from drf_spectacular.utils import OpenApiExample

from ... import audit
from . import samples as v
from .base import Doc, answer, refusal
from .runs import REGISTERED

OPERATIONS = {
    "wait_run": Doc(
        tag="runs",
        role="any role",
        summary="Wait for a run to move (long poll)",
        description="Answers the run, as `GET /runs/{id}` does, as soon as its `revision` passes "
        "`after_revision` (by default the revision it has now), or at `timeout` seconds (0 to 60, default 30) "
        "with the run unchanged: compare its `revision` with yours. A decision, an expiry or any other move "
        "wakes the wait within a fraction of a second, with no webhook receiver and no polling; the server "
        "holds the wait in its asynchronous process, not a thread. A run outside your scope is a 404, as one "
        "that does not exist. Unknown query parameters are a 400.",
        errors={400: ("invalid_request",), 404: ("not_found",)},
    ),
    "stream_events": Doc(
        tag="runs",
        role="any role",
        summary="Stream the events you may read (Server-Sent Events)",
        description="`text/event-stream`: every event of the scopes you hold a role in (or of `scope`, one "
        "of them or below), each message with the event's id as its `id:`, its kind as its `event:` and the "
        "event as JSON (the schema below; `at` with microseconds, as its hash covers it) as its `data:`. It "
        "starts after the newest event, or after `Last-Event-ID` (or `last_event_id`): a dropped stream "
        "resumes from the last id it saw with nothing lost or repeated, in commit order. A comment keeps an "
        "idle stream alive every 15 seconds; `retry:` asks a browser to reconnect after 2 s. A `scope` you "
        "hold no role in is a 403.",
        errors={400: ("invalid_request",), 403: ("forbidden",)},
    ),
}

EXAMPLES: dict[str, list[OpenApiExample]] = {
    "wait_run": [
        answer(
            "moved: admitted",
            v.run(state="running", revision=3, last_reason="approval"),
            200,
        ),
        answer("timed out: as it was", v.run(state="paused", revision=2, suspension_id=v.SUSPENSION_ID), 200),
    ],
    "stream_events": [
        OpenApiExample(
            "a message's data",
            value={**REGISTERED, "prev_hash": audit.GENESIS, "hash": audit.event_hash(audit.GENESIS, REGISTERED)},
            summary="a message's data",
            description="Sent as `id: 2`, `event: registered`, `data: {...}` (this object on one line).",
            response_only=True,
            status_codes=["200"],
            media_type="text/event-stream",
        )
    ],
}

REFUSALS: dict[str, list[OpenApiExample]] = {
    "wait_run": [
        refusal(
            "a timeout past 60",
            v.problem(
                400,
                "invalid_request",
                "Invalid request",
                "timeout must be a whole number from 0 to 60",
                errors={"timeout": ["Not a valid number."]},
            ),
        )
    ],
    "stream_events": [
        refusal(
            "a scope you hold no role in",
            v.problem(403, "forbidden", "Your role does not allow this in that scope", "no role in scope 'globex'"),
        )
    ],
}
