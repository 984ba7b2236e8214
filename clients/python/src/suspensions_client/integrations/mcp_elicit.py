"""URL-mode elicitation for `suspensions-mcp` (clients/python/README.md, "MCP server"; MCP 2025-11-25 and 2026-07-28).

When the MCP client declares URL elicitation, `request_approval` does not hand
back a pending approval to poll: it asks the client to open the approval's
console page (a sealed, single-use link the service mints, `POST
/approvals/{id}/link`), waits for the person's decision (the run's long poll,
`GET /runs/{id}/wait`; polling where the service lacks it), and then either
spends the approval (start and complete the run, once: the client may run the
`approved_calls`) or refuses with the denial's reason. A client without URL
elicitation, or a person who declines to open the link, gets today's answer:
the pending approval and its link, to wait for and claim with the other tools.

Two shapes of the same exchange, by the negotiated protocol:

- 2026-07-28: the first round answers an `InputRequiredResult` whose input
  request is the URL elicitation and whose `request_state` names the approval;
  the SDK seals that state (AES-GCM, `--state-key`) and refuses it altered; the
  client retries with it once the person has the page. The state is single use
  through the claim: a second retry with it finds the approval spent
  (`resume_already_started`) and runs nothing.
- 2025-11-25 and older: the server sends `elicitation/create` (mode `url`) in the
  middle of the call and goes on when the client answers.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ElicitRequest, ElicitRequestURLParams, ElicitResult, InputRequiredResult

from ..aio import AsyncClient

INPUT_KEY = "approval"  # the key of the one input request, and of its response on the retry
MODERN = "2026-07-28"  # from this protocol on, a server asks by `InputRequiredResult`, not mid-call


def can_elicit_url(ctx: Context[Any, Any]) -> bool:
    """Whether the client declared URL-mode elicitation."""
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and elicitation.url is not None


def modern(ctx: Context[Any, Any]) -> bool:
    version = ctx.protocol_version
    return version is not None and version >= MODERN  # the revisions are dates: their strings sort in time


def message_for(asked: dict[str, Any], tool: str) -> str:
    approval = asked["approval_id"]
    return f"A person must approve calling {tool} before it runs: open the link to decide (approval {approval})."


async def link_for(client: AsyncClient, approval_id: str) -> str:
    return (await client.link_approval(approval_id)).url


def first_round(asked: dict[str, Any], url: str, message: str) -> InputRequiredResult:
    """2026-07-28: ask for the URL elicitation; the state names the approval (the SDK seals it)."""
    params = ElicitRequestURLParams(message=message, url=url, elicitation_id=asked["approval_id"])
    state = json.dumps({"approval_id": asked["approval_id"], "run_id": asked["run_id"]})
    return InputRequiredResult(input_requests={INPUT_KEY: ElicitRequest(params=params)}, request_state=state)


def state_of(ctx: Context[Any, Any]) -> str:
    """The approval a retry names; the SDK already refused a state it did not seal itself."""
    try:
        state = json.loads(ctx.request_state or "")
        return str(state["approval_id"])
    except (ValueError, KeyError, TypeError):
        raise ToolError("invalid_state: this request_state names no approval of this server") from None


def accepted(ctx: Context[Any, Any]) -> bool:
    """Whether the person agreed to open the link (the retry's response to the elicitation)."""
    response = (ctx.input_responses or {}).get(INPUT_KEY)
    return isinstance(response, ElicitResult) and response.action == "accept"


async def mid_call(ctx: Context[Any, Any], asked: dict[str, Any], url: str, message: str) -> bool:
    """2025-11-25 and older: `elicitation/create` in the middle of the call; True when the person accepted."""
    answer = await ctx.elicit_url(message=message, url=url, elicitation_id=asked["approval_id"])
    return answer.action == "accept"
