"""The Agent Card (docs/api.md, "A2A"): who answers, where, how to authenticate, and the one skill."""

from typing import Any

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from django.conf import settings
from django.http import HttpRequest
from django.urls import reverse
from google.protobuf import json_format

MODES = ["application/json", "text/plain"]

ANSWER_A_PAUSE = AgentSkill(
    id="answer-pause",
    name="Answer a pause",
    description="A paused agent run waiting for approval is a task in input-required (its id is the pause's id, "
    "its context id the run's). Send a message on the task with one data part {decision: approve | deny | respond, "
    "note, reason, edits, response}: the run is admitted, answered in words, or failed, exactly once.",
    tags=["approval", "human-in-the-loop", "pause"],
    examples=['{"decision": "approve", "note": "Looks right."}', '{"decision": "deny", "reason": "Wrong account."}'],
    input_modes=["application/json"],
    output_modes=MODES,
)


def endpoint_url(request: HttpRequest) -> str:
    """The JSON-RPC endpoint's URL: on CONSOLE_BASE_URL when it is set, else on the request's own host (as a
    callback URL is, api/views.callback_url)."""
    path = reverse("a2a")
    base = settings.CONSOLE_BASE_URL
    return request.build_absolute_uri(path) if base == settings.CONSOLE_BASE_URL_DEFAULT else f"{base}{path}"


def card(request: HttpRequest) -> dict[str, Any]:
    bearer = SecurityScheme(
        http_auth_security_scheme=HTTPAuthSecurityScheme(
            scheme="bearer", description="An API token of the service, with the approver role in the pause's scope."
        )
    )
    found = AgentCard(
        name="suspensions",
        description="Holds paused AI-agent runs and resumes each one exactly once; answer a pause here.",
        version=str(settings.SPECTACULAR_SETTINGS["VERSION"]),
        supported_interfaces=[
            AgentInterface(url=endpoint_url(request), protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False, push_notifications=True),
        security_schemes={"bearer": bearer},
        security_requirements=[SecurityRequirement(schemes={"bearer": StringList()})],
        default_input_modes=MODES,
        default_output_modes=MODES,
        skills=[ANSWER_A_PAUSE],
    )
    return json_format.MessageToDict(found)  # type: ignore[no-any-return]
