"""Figure (a) of bench/push.py: what the outbox costs a transition, in statements.

Counted from Django's own record of each statement and off the PostgreSQL
wire (common.CountingProxy); see bench/push.py's docstring for the figures.
"""

from typing import Any

import common
from push_harness import SCOPE

OUTBOX_TABLE = "suspensions_outboxevent"


# -- (a) statements per transition -------------------------------------------------------


def transitions(who: Any, ops: int) -> dict[str, list[Any]]:
    """`ops` ready-made subjects for each transition, so each measured call does one transition only."""
    from suspensions import services

    def suspended() -> list[Any]:
        out = []
        for run_id in common.bulk_runs(ops, SCOPE):
            s = suspend(who, run_id)
            out.append(services.Version(run_id=run_id, suspension_id=s.id, run_revision=2))
        return out

    return {
        "suspend (approval)": common.bulk_runs(ops, SCOPE),
        "approve": suspended(),
        "deny": suspended(),
        "complete": common.bulk_runs(ops, SCOPE),
    }


def suspend(who: Any, run_id: Any) -> Any:
    from suspensions import services

    return services.suspend_run(
        principal=who,
        run_id=run_id,
        revision=1,
        reason="approval",
        pending=common.pending_call(),
        continuation=common.continuation(),
        ttl_seconds=3600,
    )


def do(kind: str, who: Any, subject: Any) -> None:
    from suspensions import services

    if kind == "suspend (approval)":
        suspend(who, subject)
    elif kind == "approve":
        services.approve(principal=who, suspension_id=subject.suspension_id, version=subject)
    elif kind == "deny":
        services.deny_approval(principal=who, suspension_id=subject.suspension_id, version=subject, reason="bench")
    else:
        services.complete_run(principal=who, run_id=subject, revision=1)


def is_statement(sql: str) -> bool:
    head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
    return head not in {"SAVEPOINT", "RELEASE", "ROLLBACK", "BEGIN", "COMMIT"}


def statements(ops: int) -> dict[str, dict[str, float]]:
    """Per transition: statements in all (Django's record and the wire), the outbox's, and the rest."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    who = common.principal(SCOPE, ["engine", "approver", "operator"])
    out: dict[str, dict[str, float]] = {}
    for kind, subjects in transitions(who, ops).items():
        with CaptureQueriesContext(connection) as captured:
            for subject in subjects:
                do(kind, who, subject)
        sqls = [q["sql"] for q in captured.captured_queries if is_statement(q["sql"])]
        outbox = sum(1 for sql in sqls if OUTBOX_TABLE in sql)
        out[kind] = {
            "statements": round(len(sqls) / ops, 2),
            "outbox": round(outbox / ops, 2),
            "without_outbox": round((len(sqls) - outbox) / ops, 2),
        }
    # The same again on the wire: what PostgreSQL actually received, commits and round trips included.
    info = common.conninfo(common.bench_database_url())
    proxy = common.CountingProxy(info["host"], info["port"])
    try:
        subjects_by_kind = transitions(who, ops)
        with common.django_through(proxy.port):
            for kind, subjects in subjects_by_kind.items():
                do(kind, who, subjects[0])  # the pool's first connection is not the transition's cost
                before = proxy.snapshot()
                for subject in subjects[1:]:
                    do(kind, who, subject)
                wire = common.per_op(before, proxy.snapshot(), len(subjects) - 1)
                out[kind].update(wire_statements=wire["statements"], round_trips=wire["round_trips"])
    finally:
        proxy.close()
    return out
