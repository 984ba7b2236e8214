from tests.helpers import pause, post, version


def test_external_tool_pause_resumes_once_and_replays(engine):
    s = pause(engine)
    body = {"version": version(s), "results": [{"call_id": "c1", "content": {"ok": True}}]}
    first = post(engine, f"/api/v1/runs/{s['run_id']}/resume", body)
    assert first.status_code == 201, first.content
    assert first.json()["suspension"]["continuation"]["step_index"] == 2
    again = post(engine, f"/api/v1/runs/{s['run_id']}/resume", body)
    assert again.status_code == 200, again.content
    assert again.json()["fresh"] is False
    assert "suspension" not in again.json()
