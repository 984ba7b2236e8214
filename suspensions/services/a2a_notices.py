"""What an A2A push subscription is sent (docs/api.md, "A2A"): each change of its task's state, as the a2a-sdk's
own push sender serialises it (a StreamResponse holding a TaskStatusUpdateEvent).

The fan-out (services/outbox.py) asks `notice` for the body of an announced event to an A2A endpoint; None when
the event does not change the task's state (another pause of the run, or the run's end after a denial or an
expiry, which ended the task already). The states are those of GetTask (api/a2a_tasks.py).
"""

import json
from collections.abc import Iterable
from typing import Any

from a2a.types import TaskState, TaskStatus, TaskStatusUpdateEvent
from a2a.utils.proto_utils import to_stream_response
from google.protobuf import json_format

from ..models import Approval, ApprovalStatus, EventType, OutboxEvent, WebhookEndpoint

# The announced events that can change a task's state: what an A2A endpoint asks the fan-out for.
TYPES = [EventType.APPROVAL_DECIDED, EventType.SUSPENSION_EXPIRED, EventType.RUN_FINISHED, EventType.RUN_CLOSED]
# The run's state in a run.finished or run.closed, as the task's state (an admitted pause follows its run).
BY_RUN = {
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "incomplete": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}
ADMITTED = (ApprovalStatus.APPROVED, ApprovalStatus.RESPONDED)


def statuses(endpoints: Iterable[WebhookEndpoint]) -> dict[str, str]:
    """The approval status of each A2A endpoint's task (one query; a decided status never changes again)."""
    tasks = {e.task_id for e in endpoints if e.task_id is not None}
    if not tasks:
        return {}
    rows = Approval.objects.filter(pk__in=tasks).values_list("suspension_id", "status")
    return {str(task): status for task, status in rows}


def state_after(event: OutboxEvent, task_id: str, status: str) -> Any:
    """The task's state once `event` happened, or None when it does not change it."""
    data, own = event.data, event.data.get("suspension_id") == task_id
    if event.type == EventType.APPROVAL_DECIDED:
        deny = data.get("decision") == "deny"
        return (TaskState.TASK_STATE_REJECTED if deny else TaskState.TASK_STATE_WORKING) if own else None
    if event.type == EventType.SUSPENSION_EXPIRED:
        return TaskState.TASK_STATE_CANCELED if own else None
    if event.type in (EventType.RUN_FINISHED, EventType.RUN_CLOSED):
        if status == ApprovalStatus.CANCELLED:  # the run was cancelled while it waited: no decision was announced
            return TaskState.TASK_STATE_CANCELED
        return BY_RUN.get(data.get("state", "")) if status in ADMITTED else None
    return None


def notice(event: OutboxEvent, endpoint: WebhookEndpoint, status: str) -> str | None:
    """The body for `endpoint` (an A2A subscription) of `event`: its task's status update, or None."""
    task_id = str(endpoint.task_id)
    state = state_after(event, task_id, status)
    if state is None:
        return None
    status_ = TaskStatus(state=state, timestamp=event.created_at)
    update = TaskStatusUpdateEvent(task_id=task_id, context_id=str(endpoint.run_id), status=status_)
    update.metadata.update({"type": event.type, "revision": event.data.get("revision")})
    body = json_format.MessageToDict(to_stream_response(update))
    return json.dumps(body, separators=(",", ":"), sort_keys=True)
