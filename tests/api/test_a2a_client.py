"""A2A driven by the `a2a-sdk`'s own client against the real server (uvicorn on the test's database)
(docs/api.md, "A2A"): the card, a pause as an input-required task, its answer by message through the REST API's
claim path (the run resumes exactly once), a replay that changes nothing, and a conflicting answer refused."""

import asyncio
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState
from a2a.utils.errors import A2AError
from django.db import connection
from google.protobuf import json_format, struct_pb2

from suspensions.models import Admission, Approval, Event, Run
from suspensions.tokens import create_token
from tests.api.test_waits import asgi  # noqa: F401  (the fixture: uvicorn on the test database)
from tests.helpers import approval_pause


@pytest.fixture
def server(asgi):  # noqa: F811  (the fixture imported above)
    """uvicorn serving suspensions_project.asgi (as `make run` does) on the test database; its base URL."""
    return f"http://127.0.0.1:{asgi}"


def answer(task_id: str, message_id: str, **decision: Any) -> SendMessageRequest:
    data = json_format.ParseDict(decision, struct_pb2.Value())
    message = Message(message_id=message_id, task_id=task_id, role=Role.ROLE_USER, parts=[Part(data=data)])
    return SendMessageRequest(message=message)


async def session(base: str, secret: str, work: Any) -> Any:
    """`work(client, card)` with the SDK's client for the agent at `base`, found through its card."""
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30) as http_client:
        card = await A2ACardResolver(http_client, base).get_agent_card()
        client = await create_client(card, ClientConfig(httpx_client=http_client, streaming=False))
        return await work(client, card)


async def sent(client: Any, request: SendMessageRequest) -> Any:
    events = [event async for event in client.send_message(request)]
    assert len(events) == 1 and events[0].HasField("task"), events
    return events[0].task


def trail(record: Approval) -> dict[str, Any]:
    """What a decision writes: the run's events, its admissions, the run."""
    run = Run.objects.get(pk=record.run_id)
    return {
        "events": list(Event.objects.filter(run_id=record.run_id).order_by("id").values_list("kind", "revision")),
        "admissions": Admission.objects.filter(run_id=record.run_id).count(),
        "run": (run.state, run.revision),
    }


def trail_in_thread(record: Approval) -> dict[str, Any]:
    """`trail` from a worker thread, which closes the connection it opened."""
    try:
        return trail(record)
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_an_a2a_client_answers_a_pause_once_and_its_replay_changes_nothing(server):
    record = approval_pause(scope="acme/support")
    task_id = str(record.suspension_id)
    secret = create_token(scope="acme", roles=("approver",), name="alice")[1]
    paused = trail(record)

    async def work(client: Any, card: Any) -> dict[str, Any]:
        seen: dict[str, Any] = {"card": card}
        seen["waiting"] = await client.get_task(GetTaskRequest(id=task_id))
        seen["answered"] = await sent(client, answer(task_id, "m-1", decision="approve", note="Looks right."))
        seen["after_one"] = await asyncio.to_thread(trail_in_thread, record)
        seen["replayed"] = await sent(client, answer(task_id, "m-1", decision="approve", note="Looks right."))
        seen["after_replay"] = await asyncio.to_thread(trail_in_thread, record)
        with pytest.raises(A2AError) as conflict:
            await sent(client, answer(task_id, "m-2", decision="deny", reason="Wrong account."))
        seen["conflict"] = conflict.value
        return seen

    seen = asyncio.run(session(server, secret, work))

    card = seen["card"]
    assert [s.id for s in card.skills] == ["answer-pause"]
    assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "bearer"
    assert card.supported_interfaces[0].url == f"{server}/a2a/"

    waiting = seen["waiting"]
    assert (waiting.id, waiting.context_id) == (task_id, str(record.run_id))
    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    data = json_format.MessageToDict(waiting.status.message.parts[1].data)
    assert [c["name"] for c in data["approval"]["calls"]] == ["send_refund"]
    assert "send_refund" in waiting.status.message.parts[0].text

    # Resumed exactly once: one admission, one claim event, the run moved by one revision.
    assert seen["answered"].status.state == TaskState.TASK_STATE_WORKING
    after = seen["after_one"]
    assert after["admissions"] == 1
    assert after["run"] == ("running", paused["run"][1] + 1)
    assert len(after["events"]) == len(paused["events"]) + 1
    # The same message again: the same task, nothing written.
    assert seen["replayed"] == seen["answered"]
    assert seen["after_replay"] == after
    # A different answer to the decided pause is refused as the REST API refuses it, and writes nothing.
    assert seen["conflict"].data == {"code": "not_suspended", "status": "409"}
    assert trail(record) == after
    assert Approval.objects.get(pk=record.pk).status == "approved"


@pytest.mark.django_db(transaction=True)
def test_two_agents_answering_one_pause_at_once_one_claim_wins_and_the_other_is_refused(server):
    """Real concurrent connections to the real server: approve and deny race; exactly one is written."""
    record = approval_pause(scope="acme/support")
    task_id = str(record.suspension_id)
    alice = create_token(scope="acme", roles=("approver",), name="alice")[1]
    bob = create_token(scope="acme", roles=("approver",), name="bob")[1]
    paused = trail(record)

    async def one(secret: str, decision: dict[str, Any]) -> Any:
        async def work(client: Any, card: Any) -> Any:
            try:
                return await sent(client, answer(task_id, f"m-{secret[-6:]}", **decision))
            except A2AError as refused:
                return refused

        return await session(server, secret, work)

    async def race() -> list[Any]:
        approve = one(alice, {"decision": "approve"})
        deny = one(bob, {"decision": "deny", "reason": "No."})
        return list(await asyncio.gather(approve, deny))

    outcomes = asyncio.run(race())
    refused = [o for o in outcomes if isinstance(o, A2AError)]
    won = [o for o in outcomes if not isinstance(o, A2AError)]
    assert len(won) == 1 and len(refused) == 1, outcomes
    assert refused[0].data["code"] in ("not_suspended", "admission_conflict")
    after = trail(record)
    assert len(after["events"]) == len(paused["events"]) + 1  # one claim: admitted, or denied
    assert after["run"][1] == paused["run"][1] + 1
    status = Approval.objects.get(pk=record.pk).status
    assert (status, after["admissions"]) in (("approved", 1), ("denied", 0))
    expected = TaskState.TASK_STATE_WORKING if status == "approved" else TaskState.TASK_STATE_REJECTED
    assert won[0].status.state == expected
