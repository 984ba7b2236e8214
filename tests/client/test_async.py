"""The async client on the representative path, against the live gunicorn: the same methods, awaited."""

import asyncio

from suspensions_client import AsyncClient, Claimed, Retry

from suspensions.models import Admission, Event, Start

from .conftest import cont, pending


def test_the_async_client_registers_pauses_waits_for_the_approval_starts_and_completes(base_url, token):
    engine_token, approver_token = token("acme", ["engine"]), token("acme", ["approver"], "async-approver")

    async def loop():
        async with AsyncClient(base_url, engine_token) as engine, AsyncClient(base_url, approver_token) as approver:
            run = await engine.register("async-agent", scope="acme")
            calls = [{"id": "c1", "name": "refund", "arguments": {"amount": 5}}]
            pause = await engine.pause_for_approval(run, calls, cont(), ttl_seconds=600)
            waiting = asyncio.create_task(
                engine.wait_for_admission(pause.run_id, pause.id, timeout=60, poll_interval=0.1)
            )
            decision = await approver.decide(pause.id, (await approver.get_approval(pause.id)).version)
            outcome = await waiting
            started = await engine.start(outcome)
            done = await engine.complete(started)
            return decision, outcome, started, done

    decision, outcome, started, done = asyncio.run(loop())
    assert isinstance(decision, Claimed) and outcome.admitted
    assert outcome.admission.id == decision.admission.id == started.admission.id
    assert started.fresh and started.suspension.pending[0].arguments_json() == {"amount": 5}
    assert started.input_json()["decision"] == "approve"
    assert (done.state, done.revision) == ("completed", 4)
    kinds = list(Event.objects.filter(run_id=done.id).order_by("id").values_list("kind", flat=True))
    assert kinds == ["registered", "suspended", "admitted", "started", "completed"]


def test_the_async_client_resends_a_resume_whose_answer_was_lost(base_url, token, tmp_path):
    secret = token("acme", ["engine"])
    notices = []

    async def resume_twice():
        async with AsyncClient(base_url, secret) as engine:
            pause = await engine.suspend(
                await engine.register("a", scope="acme"),
                reason="external_tool",
                pending=[pending()],
                continuation=cont(),
            )
        headers = {"X-Test-Kill-Once": str(tmp_path / "kill")}
        async with AsyncClient(base_url, secret, headers=headers, retry=Retry(on_retry=notices.append)) as dying:
            return pause, await dying.resume(pause, [{"call_id": "c1", "content": 1}])

    pause, replay = asyncio.run(resume_twice())
    assert (replay.fresh, replay.suspension, len(notices)) == (False, None, 1)
    assert (
        Admission.objects.filter(run_id=pause.run_id).count() == Start.objects.filter(run_id=pause.run_id).count() == 1
    )
