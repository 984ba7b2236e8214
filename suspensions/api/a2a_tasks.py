"""An approval pause as an A2A Task (docs/api.md, "A2A"): its id is the pause's id (the approval's
`suspension_id`), its context id the run's, and its state is read from the approval and its run.

Built from the approval as `GET /approvals/{id}` answers it (approval_reads.find_approval), so A2A shows what
the REST API shows, to whom it shows it.
"""

from typing import Any

from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus
from google.protobuf import json_format, struct_pb2

from ..models import ApprovalStatus, RunState
from ..wire.answers import ApprovalOut

# What a decided approval's status says, whatever its run does next.
DECIDED = {
    ApprovalStatus.DENIED: TaskState.TASK_STATE_REJECTED,
    ApprovalStatus.EXPIRED: TaskState.TASK_STATE_CANCELED,
    ApprovalStatus.CANCELLED: TaskState.TASK_STATE_CANCELED,
}
# An admitted approval (approved, responded) follows its run: admitted or running is working; a later pause of the
# run is a task of its own, so this one stays working until the run ends.
BY_RUN = {
    RunState.RUNNING: TaskState.TASK_STATE_WORKING,
    RunState.PAUSED: TaskState.TASK_STATE_WORKING,
    RunState.COMPLETED: TaskState.TASK_STATE_COMPLETED,
    RunState.FAILED: TaskState.TASK_STATE_FAILED,
    RunState.INCOMPLETE: TaskState.TASK_STATE_FAILED,
    RunState.CANCELLED: TaskState.TASK_STATE_CANCELED,
    RunState.EXPIRED: TaskState.TASK_STATE_CANCELED,
}


def state_of(approval: ApprovalOut) -> Any:
    """The task's state: input-required while the approval waits; then by the decision and the run."""
    if approval.status == ApprovalStatus.PENDING:
        return TaskState.TASK_STATE_INPUT_REQUIRED
    if approval.status in DECIDED:
        return DECIDED[ApprovalStatus(approval.status)]
    return BY_RUN.get(RunState(approval.run_state or RunState.RUNNING), TaskState.TASK_STATE_WORKING)


def question(approval: ApprovalOut) -> str:
    names = ", ".join(c.name for c in approval.calls) or "no tool"
    return (
        f"Agent {approval.agent_id} asks to call {names}. Answer with a data part "
        '{"decision": "approve" | "deny" | "respond", "note", "reason", "edits", "response"}.'
    )


def said(approval: ApprovalOut) -> str:
    """What the status message says once the approval is decided."""
    if approval.status == ApprovalStatus.DENIED:
        return f"Denied by {approval.decided_by}: {approval.note}"
    if approval.status in (ApprovalStatus.EXPIRED, ApprovalStatus.CANCELLED):
        return f"The approval was {approval.status}."
    return f"{str(approval.status).capitalize()} by {approval.decided_by}; the run is {approval.run_state}."


def data_part(body: dict[str, Any]) -> Part:
    return Part(data=json_format.ParseDict(body, struct_pb2.Value()), media_type="application/json")


def task_of(approval: ApprovalOut) -> Task:
    """The task: its status message carries the question in words and the approval (as the REST API's) as data."""
    task_id, run_id = str(approval.suspension_id), str(approval.run_id)
    state = state_of(approval)
    text = question(approval) if state == TaskState.TASK_STATE_INPUT_REQUIRED else said(approval)
    message = Message(
        message_id=f"{task_id}-{approval.status}",
        task_id=task_id,
        context_id=run_id,
        role=Role.ROLE_AGENT,
        parts=[Part(text=text), data_part({"approval": approval.wire()})],
    )
    moment = approval.resolved_at or approval.created_at
    status = TaskStatus(state=state, message=message, timestamp=moment)
    return Task(id=task_id, context_id=run_id, status=status)
