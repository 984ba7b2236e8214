import pytest

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


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", ["/api/v1/runs", "/api/v1/webhooks", "/api/v1/approval-floors", "/api/v1/notification-routes"]
)
def test_options_answers_the_view_s_name_and_media_types_without_building_a_serializer(path):
    """The list-and-create views have no serializer to describe a POST with (the bodies are wire models)."""
    from suspensions.tokens import create_token
    from tests.helpers import client

    secret = create_token(scope="acme", roles=["engine", "operator"], name="options")[1]
    response = client(secret).options(path)
    assert response.status_code == 200
    assert set(response.json()) == {"name", "description", "renders", "parses"}
