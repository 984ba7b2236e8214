"""suspensions-mcp in a session of the mcp SDK's own client, over stdio and over streamable HTTP.

The server runs as its own process against the live server; the test is both
the MCP client (an assistant asking for a person) and the approver, who
decides through the API between the tool calls.
"""

import asyncio
import os
import socket
import subprocess
import sys
import threading
import tomllib
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from mcp import Client as MCPClient
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from suspensions.models import Admission, Run, Start, Suspension
from tests.processes import wait_for
from tests.push.receivers import free_port

from .conftest import cont, pending

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
MODULE = "suspensions_client.integrations.mcp_server"
REFUND = {"order": 42, "amount": 900}


def server_env(base_url, secret):
    # The client package of this checkout, whatever the virtualenv's editable install points at.
    path = os.pathsep.join(filter(None, [str(ROOT / "clients" / "python" / "src"), os.environ.get("PYTHONPATH")]))
    env = {k: v for k, v in os.environ.items() if k != "SUSPENSIONS_MCP_HTTP_TOKEN"}
    return {**env, "SUSPENSIONS_URL": base_url, "SUSPENSIONS_TOKEN": secret, "PYTHONPATH": path}


def stdio(base_url, secret):
    argv = ["-m", MODULE, "--poll", "0.2"]
    return StdioServerParameters(command=sys.executable, args=argv, env=server_env(base_url, secret), cwd=ROOT)


async def call(client, name, **arguments):
    result = await client.call_tool(name, arguments)
    if result.is_error:
        return {"error": " ".join(part.text for part in result.content)}
    return result.structured_content


def decide_soon(approver, approval_id, decision, **options):
    """The approver decides from another thread while the MCP client waits for the decision."""

    def run():
        pause = approver.get_approval(approval_id)
        approver.decide(approval_id, pause.version, decision, **options)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


async def ask_refund(session):
    return await call(
        session, "request_approval", agent_id="desk-assistant", tool="send_refund", arguments=REFUND, scope="acme"
    )


def session(server, steps):
    """Run `steps(mcp_client)` in one MCP session with `server` (stdio parameters or an HTTP URL)."""

    async def go():
        async with MCPClient(server, read_timeout_seconds=120) as client:
            return await steps(client)

    return asyncio.run(go())


def test_over_stdio_an_approved_and_edited_call_comes_back_once_and_the_run_completes(base_url, token, approver):
    secret = token("acme", ["engine", "auditor"], "mcp-desk")

    async def steps(client):
        names = {t.name for t in (await client.list_tools()).tools}
        asked = await ask_refund(client)
        pending = await call(client, "get_approval", approval_id=asked["approval_id"])
        not_yet = await call(client, "wait_for_decision", approval_id=asked["approval_id"], timeout_seconds=0)
        edited = '{"order": 42, "amount": 500}'
        deciding = decide_soon(
            approver, asked["approval_id"], "approve", reason="half now", calls=[{"id": "call_1", "arguments": edited}]
        )
        decided = await call(client, "wait_for_decision", approval_id=asked["approval_id"], timeout_seconds=60)
        deciding.join()
        again = await call(client, "get_approval", approval_id=asked["approval_id"])
        read_only = list(Start.objects.filter(run_id=asked["run_id"]))
        claimed = await call(client, "claim_approval", approval_id=asked["approval_id"])
        twice = await call(client, "claim_approval", approval_id=asked["approval_id"])
        return names, asked, pending, not_yet, decided, again, read_only, claimed, twice

    names, asked, pending, not_yet, decided, again, read_only, claimed, twice = session(stdio(base_url, secret), steps)
    assert names == {"request_approval", "get_approval", "wait_for_decision", "claim_approval"}
    assert asked["console_url"] == f"{base_url}/console/approvals/{asked['approval_id']}/"
    assert pending["status"] == "pending" and pending["requested"] == [{"tool": "send_refund", "arguments": REFUND}]
    assert not_yet["status"] == "pending" and not_yet["timed_out"] is True
    assert decided["status"] == "approved" and decided["timed_out"] is False and decided["reason"] == "half now"
    assert decided["approved_calls"] == [
        {"tool": "send_refund", "arguments": {"order": 42, "amount": 500}, "edited": True}
    ]
    assert again["status"] == "approved" and again["approved_calls"] == decided["approved_calls"]
    assert read_only == []  # the reads started nothing
    assert claimed["claimed"] is True and claimed["approved_calls"] == decided["approved_calls"]
    assert "resume_already_started" in twice["error"]  # the approval is spent once
    run = Run.objects.get(pk=asked["run_id"])
    assert run.state == "completed" and run.tags == ["suspensions-mcp"]
    assert [a.state for a in Admission.objects.filter(run_id=run.id)] == ["done"]
    assert Start.objects.filter(run_id=run.id).count() == 1


@contextmanager
def http_server(base_url, secret, *args, http_token=None):
    """suspensions-mcp --transport http on a free port of 127.0.0.1; yields its /mcp URL."""
    port = free_port()
    env = server_env(base_url, secret)
    if http_token:
        env["SUSPENSIONS_MCP_HTTP_TOKEN"] = http_token
    argv = [sys.executable, "-m", MODULE, "--transport", "http", "--port", str(port), "--poll", "0.2", *args]
    server = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: listening(port) or server.poll() is not None, "the MCP server's HTTP port")
        assert server.poll() is None, "suspensions-mcp --transport http exited"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=30)


def with_bearer(url, secret):
    """The MCP SDK's streamable HTTP transport, sending `Authorization: Bearer <secret>` on every request."""
    return streamable_http_client(
        url, http_client=create_mcp_http_client(headers={"Authorization": f"Bearer {secret}"})
    )


def test_over_http_a_denial_reaches_the_client_with_the_reason(base_url, token, approver):
    http_token = "mcp-http-token-of-this-test"

    async def steps(client):
        asked = await ask_refund(client)
        deciding = decide_soon(approver, asked["approval_id"], "deny", reason="too much")
        decided = await call(client, "wait_for_decision", approval_id=asked["approval_id"], timeout_seconds=60)
        deciding.join()
        looked = await call(client, "get_approval", approval_id=asked["approval_id"])
        return asked, decided, looked

    secret = token("acme", ["engine", "auditor"], "mcp-http")
    with http_server(base_url, secret, http_token=http_token) as url:
        asked, decided, looked = session(with_bearer(url, http_token), steps)
    assert decided["status"] == "denied" and decided["reason"] == "too much" and decided["approved_calls"] == []
    assert looked["status"] == "denied" and looked["reason"] == "too much" and looked["decided_by"]
    assert Run.objects.get(pk=asked["run_id"]).error == "rejected: too much"


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


def head(h, url, headers):
    """A GET's status, read without its body: a GET of /mcp that got through is an event stream that stays open."""
    with h.stream("GET", url, headers=headers) as answer:
        return answer


def test_over_http_every_request_without_the_servers_own_bearer_token_is_a_401(base_url, token):
    http_token = "the-right-mcp-http-token"
    secret = token("acme", ["engine", "auditor"], "mcp-gate")
    with http_server(base_url, secret, http_token=http_token) as url:
        with httpx.Client(timeout=30) as h:
            opened = h.post(url, json=INITIALIZE, headers={**MCP_ACCEPT, "Authorization": f"Bearer {http_token}"})
            session_id = {"mcp-session-id": opened.headers.get("mcp-session-id", "")}
            refused = {
                "no token": h.post(url, json=INITIALIZE, headers=MCP_ACCEPT),
                "a wrong token": h.post(url, json=INITIALIZE, headers={**MCP_ACCEPT, "Authorization": "Bearer nope"}),
                "another scheme": h.post(url, json=INITIALIZE, headers={**MCP_ACCEPT, "Authorization": http_token}),
                "the API token": h.post(
                    url, json=INITIALIZE, headers={**MCP_ACCEPT, "Authorization": f"Bearer {secret}"}
                ),
                "an open session": h.post(
                    url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers={**MCP_ACCEPT, **session_id}
                ),
                "a GET": head(h, url, {**MCP_ACCEPT, **session_id}),
                "another path": head(h, url.removesuffix("/mcp") + "/", {}),
            }
    assert opened.status_code == 200, opened.text
    assert {why: answer.status_code for why, answer in refused.items()} == {why: 401 for why in refused}
    assert refused["no token"].headers["www-authenticate"].startswith("Bearer")


def test_over_http_the_right_bearer_token_gets_a_session_of_the_mcp_sdks_own_client(base_url, token):
    http_token = "the-right-mcp-http-token"

    async def tools(client):
        return {t.name for t in (await client.list_tools()).tools}

    with http_server(base_url, token("acme", ["engine", "auditor"], "mcp-right"), http_token=http_token) as url:
        names = session(with_bearer(url, http_token), tools)
    assert names == {"request_approval", "get_approval", "wait_for_decision", "claim_approval"}


def test_the_http_transport_refuses_to_bind_beyond_loopback_without_a_token(base_url, token):
    env = server_env(base_url, token("acme", ["engine", "auditor"], "mcp-open"))
    argv = [sys.executable, "-m", MODULE, "--transport", "http", "--host", "0.0.0.0", "--port", str(free_port())]
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--host 0.0.0.0 is beyond loopback" in done.stderr
    assert "give --http-token or set SUSPENSIONS_MCP_HTTP_TOKEN" in done.stderr


def test_the_http_transport_on_loopback_without_a_token_serves_and_says_so(base_url, token):
    port = free_port()
    env = server_env(base_url, token("acme", ["engine", "auditor"], "mcp-local"))
    argv = [sys.executable, "-m", MODULE, "--transport", "http", "--port", str(port)]
    server = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: listening(port) or server.poll() is not None, "the MCP server's HTTP port")
        opened = httpx.post(f"http://127.0.0.1:{port}/mcp", json=INITIALIZE, headers=MCP_ACCEPT, timeout=30)
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=30)
    assert opened.status_code == 200, opened.text
    assert "asks for no token" in stderr


def test_help_names_the_http_token_and_cites_the_projects_docs():
    done = subprocess.run(
        [sys.executable, "-m", MODULE, "--help"],
        env=server_env("http://127.0.0.1:9", ""),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert "--http-token" in done.stdout and "SUSPENSIONS_MCP_HTTP_TOKEN" in done.stdout
    assert "clients/python/README.md" in done.stdout and "DESIGN" not in done.stdout


def test_reading_an_approved_approval_over_mcp_leaves_its_engines_start_fresh(base_url, token, engine, approver):
    run = engine.register("real-engine", scope="acme")
    paused = engine.suspend(run, reason="approval", pending=[pending()], continuation=cont())
    approver.decide(paused.id, approver.get_approval(paused.id).version, "approve")
    secret = token("acme", ["engine", "auditor"], "mcp-reader")

    async def steps(client):
        looked = await call(client, "get_approval", approval_id=paused.id)
        waited = await call(client, "wait_for_decision", approval_id=paused.id, timeout_seconds=0)
        claimed = await call(client, "claim_approval", approval_id=paused.id)
        return looked, waited, claimed

    looked, waited, claimed = session(stdio(base_url, secret), steps)
    assert looked["status"] == waited["status"] == "approved"
    assert Start.objects.filter(run_id=run.id).count() == 0  # today's main started and completed it here
    assert [a.state for a in Admission.objects.filter(run_id=run.id)] == ["admitted"]
    assert "not_claimable" in claimed["error"]  # another engine's run: this server may not start it
    started = engine.start(approver.get_approval(paused.id).admission_id)
    assert started.fresh is True and started.suspension is not None  # the 201 of the one grant, to its engine
    assert Start.objects.filter(run_id=run.id).count() == 1


def test_claiming_a_pending_approval_is_refused_and_starts_nothing(base_url, token):
    secret = token("acme", ["engine", "auditor"], "mcp-early")

    async def steps(client):
        asked = await ask_refund(client)
        return asked, await call(client, "claim_approval", approval_id=asked["approval_id"])

    asked, claimed = session(stdio(base_url, secret), steps)
    assert "not_claimable: the approval is pending" in claimed["error"]
    assert Run.objects.get(pk=asked["run_id"]).state == "paused" and not Start.objects.exists()


def test_a_refused_request_is_a_tool_error_and_leaves_no_pause(base_url, token):
    secret = token("acme", ["engine", "auditor"], "mcp-bad")

    async def steps(client):
        bad_ttl = await call(
            client, "request_approval", agent_id="desk", tool="send_refund", arguments=REFUND, ttl_seconds=-5
        )
        unknown = await call(client, "get_approval", approval_id="00000000-0000-0000-0000-000000000000")
        return bad_ttl, unknown

    bad_ttl, unknown = session(stdio(base_url, secret), steps)
    assert "ttl_seconds" in bad_ttl["error"]
    assert "not_found" in unknown["error"]
    # One request registers and pauses (docs/api.md, "One call to pause: `POST /runs` with `suspend`"): refused, it
    # leaves neither a pause nor a run behind.
    assert not Suspension.objects.exists() and not Run.objects.exists()


def listening(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


EXAMPLE = ROOT / "examples" / "mcp_client_session.py"


def run_example(base_url, secret, approver, decision, *args, **options):
    """examples/mcp_client_session.py as written, the test deciding what it asked for through the API."""
    env = {**os.environ, "SUSPENSIONS_URL": base_url, "SUSPENSIONS_TOKEN": secret}
    argv = [sys.executable, str(EXAMPLE), "--poll", "0.2", *args]
    proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for(lambda: approver.list_approvals(agent_id="desk-assistant").results, "the example's approval request")
    pause = approver.list_approvals(agent_id="desk-assistant").results[0]
    approver.decide(pause.id, pause.version, decision, **options)
    output, _ = proc.communicate(timeout=120)
    return proc.returncode, output, pause


def test_the_example_runs_the_refund_as_the_approver_edited_it(base_url, token, approver):
    edited = [{"id": "call_1", "arguments": '{"order": 42, "amount": 400}'}]
    code, output, pause = run_example(base_url, token("acme", ["engine", "auditor"]), approver, "approve", calls=edited)
    assert code == 0, output
    assert f"asked for approval {pause.id}" in output
    assert 'ran send_refund({"order": 42, "amount": 400}) -> {"refunded": 400, "order": 42}' in output
    assert Run.objects.get(pk=pause.run_id).state == "completed"


def test_the_example_reports_a_denial_and_exits_2(base_url, token, approver):
    secret = token("acme", ["engine", "auditor"])
    code, output, pause = run_example(base_url, secret, approver, "deny", "--amount", "5000", reason="too much")
    assert code == 2, output
    assert "not approved: denied: too much" in output and "ran send_refund" not in output


def test_the_console_script_is_the_modules_main_and_wants_a_token():
    scripts = tomllib.loads((ROOT / "clients" / "python" / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["suspensions-mcp"].partition(":")
    assert (module, name) == (MODULE, "main")
    env = {k: v for k, v in server_env("http://127.0.0.1:9", "").items() if k != "SUSPENSIONS_TOKEN"}
    done = subprocess.run([sys.executable, "-m", MODULE], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "give --token or set SUSPENSIONS_TOKEN" in done.stderr


def test_an_approvers_answer_in_words_comes_back_as_the_response(base_url, token, approver):
    secret = token("acme", ["engine", "auditor"], "mcp-respond")

    async def steps(client):
        asked = await ask_refund(client)
        pause = approver.get_approval(asked["approval_id"])
        approver.decide(asked["approval_id"], pause.version, "respond", response="Offer store credit instead.")
        looked = await call(client, "get_approval", approval_id=asked["approval_id"])
        return asked, looked, await call(client, "claim_approval", approval_id=asked["approval_id"])

    asked, looked, claimed = session(stdio(base_url, secret), steps)
    assert looked["status"] == "responded" and looked["response"] == "Offer store credit instead."
    assert looked["approved_calls"] == [] and claimed["claimed"] is True
    assert Run.objects.get(pk=asked["run_id"]).state == "completed"


def test_the_example_approves_its_own_request_with_approve_with_token(base_url, token):
    env = {**os.environ, "SUSPENSIONS_URL": base_url, "SUSPENSIONS_TOKEN": token("acme", ["engine", "auditor"])}
    argv = [sys.executable, str(EXAMPLE), "--poll", "0.2", "--approve-with-token", token("acme", ["approver"])]
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'ran send_refund({"order": 42, "amount": 900}) -> {"refunded": 900, "order": 42}' in done.stdout
