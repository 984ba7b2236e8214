"""The client's tags (docs/api.md, "`POST /runs` — register (T1)"): given at register, pause and park; read back; `tag=`
filters the lists."""

from .conftest import cont, pending


def test_tags_given_at_register_and_pause_are_read_back_and_filter_the_lists(engine, approver):
    run = engine.register("tagged", scope="acme", tags=["team:a"])
    other = engine.register("plain", scope="acme")
    pause = engine.pause_for_approval(run, [pending()], cont(), tags=["refund"])
    engine.pause_for_approval(other, [pending()], cont())
    assert (run.tags, pause.tags) == (("team:a",), ("team:a", "refund"))
    assert [r.id for r in engine.list_runs(tag="team:a").results] == [run.id]
    assert [s.id for s in engine.list_suspensions(tag=["team:a", "refund"]).results] == [pause.id]
    assert [s.tags for s in approver.list_approvals(tag="refund").results] == [("team:a", "refund")]
    assert approver.get_approval(pause.id).tags == ("team:a", "refund")


def test_a_parked_flow_wait_takes_tags(engine):
    envelope = {
        "tenant": "acme",
        "env": "prod",
        "provider": "slack",
        "channel": "C1",
        "conversation": "conv-1",
        "user": "U1",
        "pack": "billing",
        "flow": "refund",
    }
    parked = engine.park_flow_wait(envelope, {"step": 1}, "external_tool", tags=["flow:refund"])
    assert engine.get_run(parked.run_id).tags == ("flow:refund",)
