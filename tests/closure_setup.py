"""Setup shared by the closure tests: a started (uncertain) run built through the services."""

from datetime import datetime, timedelta
from typing import Any

from suspensions import digests, services
from suspensions.models import Admission, ClosureReceipt
from suspensions.principals import Principal

from .helpers import call, continuation, snapshot

ENGINE = Principal(name="token:engine", grants=(("acme", frozenset({"engine"})),))
APPROVER = Principal(name="user:alice", grants=(("acme", frozenset({"approver"})),))
OPERATOR = Principal(name="user:olga", grants=(("acme", frozenset({"operator"})),))


def paused(
    reason: str = "external_tool",
    scope: str = "acme/support",
    *,
    agent_id: str = "agent-1",
    pending: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> Any:
    """A registered run paused once; `extra` goes to suspend_run (ttl_seconds, approval)."""
    run = services.register_run(principal=ENGINE, agent_id=agent_id, scope=scope)
    return services.suspend_run(
        principal=ENGINE,
        run_id=run.id,
        revision=run.revision,
        reason=reason,
        pending=pending or [call()],
        continuation=continuation(),
        **extra,
    )


def paused_again(claimed: services.Claimed) -> Any:
    """The started worker pauses once more: its earlier admission and start are history now."""
    return services.suspend_run(
        principal=ENGINE,
        run_id=claimed.run.id,
        revision=claimed.run.revision,
        reason="external_tool",
        pending=[call()],
        continuation=continuation(),
    )


def claim_version(suspension: Any) -> services.Version:
    return services.Version(run_id=suspension.run.id, suspension_id=suspension.id, run_revision=suspension.run.revision)


def started(scope: str = "acme/support") -> services.Claimed:
    """A run whose one-shot resume started and whose engine then went silent."""
    suspension = paused(scope=scope)
    return services.resume_run(
        principal=ENGINE,
        run_id=suspension.run.id,
        version=claim_version(suspension),
        results=[{"call_id": "c1", "content": {"ok": True}}],
    )


def approved_not_started() -> services.Claimed:
    suspension = paused(reason="approval")
    return services.approve(principal=APPROVER, suspension_id=suspension.id, version=claim_version(suspension))


def closure_body(claimed: services.Claimed, start_digest: str | None = None, **overrides: Any) -> dict[str, Any]:
    """A valid closure request for the run of `claimed`, as the operator would file it."""
    admission = claimed.admission
    assert admission is not None
    now = services.db_now()
    body: dict[str, Any] = {
        "schema_version": 1,
        "version": digests.version_dict(admission.run_id, admission.suspension_id, admission.version_revision),
        "admission_digest": admission.request_digest,
        "start_digest": start_digest or (claimed.start.digest if claimed.start else "0" * 64),
        "run_revision": claimed.run.revision,
        "issuer": "cluster-controller",
        "issuer_revision": "rev-7",
        "proof_ref": "pods/agent-7/terminated",
        "proof_digest": "ab" * 32,
        "observed_at": digests.rfc3339(now - timedelta(minutes=1)),
        "expires_at": digests.rfc3339(now + timedelta(hours=1)),
    }
    body.update(overrides)
    return body


def closure_request(claimed: services.Claimed) -> services.ClosureRequest:
    """closure_body() as the service takes it."""
    body = closure_body(claimed)
    version = services.Version(**body.pop("version"))
    times = {key: datetime.fromisoformat(body.pop(key)) for key in ("observed_at", "expires_at")}
    return services.ClosureRequest(version=version, **body, **times)


def written() -> dict[str, Any]:
    """snapshot() plus what a closure writes besides: receipts and admission states."""
    return {
        **snapshot(),
        "closures": ClosureReceipt.objects.count(),
        "admission_states": sorted(Admission.objects.values_list("id", "state")),
    }
