"""A2A under the sync deployment (docs/deploy.md, "Waits and the event stream"; docs/api.md, "A2A"): gunicorn's
threads serve the async view, and the SDK's client answers a pause through it as through the ASGI process."""

import asyncio
from typing import Any

from a2a.types import GetTaskRequest, TaskState

from suspensions.models import Admission, Approval
from suspensions.tokens import create_token
from tests.api.test_a2a_client import answer, sent, session
from tests.helpers import approval_pause


def test_gunicorn_serves_the_card_and_an_a2a_answer(base_url):
    record = approval_pause(scope="acme/support")
    task_id = str(record.suspension_id)
    secret = create_token(scope="acme", roles=("approver",), name="alice")[1]

    async def work(client: Any, card: Any) -> tuple[Any, Any, Any]:
        waiting = await client.get_task(GetTaskRequest(id=task_id))
        answered = await sent(client, answer(task_id, "m-1", decision="approve"))
        again = await sent(client, answer(task_id, "m-1", decision="approve"))
        return waiting, answered, again

    waiting, answered, again = asyncio.run(session(base_url, secret, work))
    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert answered.status.state == TaskState.TASK_STATE_WORKING
    assert again == answered
    assert Admission.objects.filter(run_id=record.run_id).count() == 1
    assert Approval.objects.get(pk=record.pk).status == "approved"
