"""Traces exported by OTLP (docs/deploy.md, "Traces"): with `OTEL_EXPORTER_OTLP_ENDPOINT` set, the web and the
worker, each a real process, export their spans to a real OTLP/HTTP receiver, and one approval is one trace
across both: the request that decides it (continuing the caller's traceparent), the claim, the fan-out and
delivery tasks and the webhook POST, whose traceparent the webhook receiver gets.

The OTLP receiver is an HTTP server in this process that decodes each `ExportTraceServiceRequest` with
opentelemetry-proto, as a collector would; the web is gunicorn with gunicorn.conf.py (tests/front_door.py),
the worker `celery worker --beat` (tests/processes.py).
"""

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from suspensions.models import MessageStatus, WebhookMessage
from suspensions.observability import tracing
from tests.front_door import Server, database_url, free_port, request, start_gunicorn
from tests.helpers import call, continuation, version
from tests.processes import Processes, celery_worker, child_env, wait_for
from tests.push.conftest import make_endpoint
from tests.push.receivers import Receiver

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"


@dataclass
class Exported:
    """One span as the receiver decoded it, with the `service.name` of the process that sent it."""

    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]


@dataclass
class OtlpReceiver:
    """An OTLP/HTTP (protobuf) trace receiver on 127.0.0.1: POST /v1/traces, each request decoded and kept."""

    port: int = field(default_factory=free_port)
    spans: list[Exported] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    server: Any = None

    def start(self) -> "OtlpReceiver":
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                export = ExportTraceServiceRequest()
                export.ParseFromString(body)
                receiver.paths.append(self.path)
                receiver.spans.extend(decoded(export))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def of_trace(self, trace_id: str) -> list[Exported]:
        return [s for s in list(self.spans) if s.trace_id == trace_id]


def decoded(export: ExportTraceServiceRequest) -> Iterator[Exported]:
    for resource_spans in export.resource_spans:
        resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield Exported(
                    service=resource.get("service.name", ""),
                    name=span.name,
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    parent_id=span.parent_span_id.hex(),
                    kind=span.kind,
                    attributes={a.key: value_of(a.value) for a in span.attributes},
                )


def value_of(value: Any) -> Any:
    return getattr(value, value.WhichOneof("value")) if value.WhichOneof("value") else None


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[Server, OtlpReceiver]]:
    """The OTLP receiver, a worker and gunicorn, both exporting to it (their batches every 100 ms)."""
    otlp = OtlpReceiver().start()
    procs = Processes()
    otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{otlp.port}", "OTEL_BSP_SCHEDULE_DELAY": "100"}
    env = child_env(WEBHOOK_ALLOW_PRIVATE="1", OTEL_SERVICE_NAME="suspensions-worker", **otel)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    log = tmp_path / "worker.log"
    procs.start(celery_worker(tmp_path, 0, "traces"), env=env, log_path=log)
    try:
        wait_for(lambda: " ready." in log.read_text(), f"the worker to be ready (log: {log})")
        web_env = {"WEBHOOK_ALLOW_PRIVATE": "1", "OTEL_SERVICE_NAME": "suspensions-web", **otel}
        gunicorn = start_gunicorn(tmp_path, database_url(connection.settings_dict), workers=1, extra_env=web_env)
        try:
            yield gunicorn, otlp
        finally:
            gunicorn.stop()
    finally:
        procs.stop_all()
        otlp.stop()


def api(port: int, path: str, secret: str, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    sent = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json", **headers}
    answer = request(port, "POST", path, headers=sent, body=json.dumps(body).encode(), timeout=30)
    assert answer.status in (200, 201), answer.body
    return json.loads(answer.body)


def test_one_approval_is_one_trace_across_the_web_and_the_worker_in_an_otlp_receiver(traced, token):
    web, otlp = traced
    hooks = Receiver(port=free_port()).start()
    try:
        make_endpoint(url=hooks.url, event_types=["approval.decided"])
        engine, alice = token("acme", ["engine"], "engine"), token("acme", ["approver"], "alice")
        run = api(web.port, "/api/v1/runs", engine, {"agent_id": "agent-1"})
        s = api(
            web.port,
            f"/api/v1/runs/{run['id']}/suspend",
            engine,
            {"revision": 1, "reason": "approval", "pending": [call()], "continuation": continuation()},
        )
        api(
            web.port,
            f"/api/v1/approvals/{s['id']}/decide",
            alice,
            {"version": version(s), "decision": "approve"},
            traceparent=f"00-{TRACE_ID}-{CALLER_SPAN}-01",
        )
        wait_for(lambda: WebhookMessage.objects.filter(status=MessageStatus.DELIVERED).exists(), "the delivery")
        (received,) = hooks.requests
    finally:
        hooks.stop()

    names = {"claim Vote", "run/suspensions.tasks.fan_out_outbox", "run/suspensions.tasks.deliver_endpoint"}
    wait_for(lambda: names <= {s.name for s in otlp.of_trace(TRACE_ID)}, "the trace's spans at the OTLP receiver")
    trace = otlp.of_trace(TRACE_ID)
    assert set(otlp.paths) == {"/v1/traces"}

    # The web's spans: the request, continuing the caller's span, and the claim inside it.
    (served,) = [s for s in trace if s.kind == 2]  # SPAN_KIND_SERVER
    assert served.service == "suspensions-web"
    assert served.parent_id == CALLER_SPAN
    assert served.attributes["http.route"] == "api/v1/approvals/<uuid:pk>/decide"
    (claim,) = [s for s in trace if s.name == "claim Vote"]
    assert claim.service == "suspensions-web"
    assert claim.parent_id == served.span_id
    assert claim.attributes[tracing.DECISION] == "approved"
    assert claim.attributes[tracing.APPROVER] == "token:alice"
    assert claim.attributes[tracing.RUN] == run["id"]
    assert claim.attributes[tracing.PAUSE] == s["id"]
    assert claim.attributes[tracing.WAIT] >= 0

    # The worker's: the fan-out and delivery tasks and the POST, in the same trace.
    (webhook,) = [s for s in trace if s.name == "webhook POST"]
    workers = {s.service for s in trace if s.name.startswith("run/")} | {webhook.service}
    assert workers == {"suspensions-worker"}
    # The webhook receiver got the POST span's own traceparent: the engine's trace goes on from there.
    assert received.headers["traceparent"] == f"00-{TRACE_ID}-{webhook.span_id}-01"
    assert webhook.attributes["http.response.status_code"] == 200


# A process's start, with and without an endpoint: what it imports and what it sets up.
PROBE = """
import sys, django
django.setup()
from django.conf import settings
from suspensions.observability import tracing
loaded = sorted({m.split(".")[1] for m in sys.modules if m.startswith("opentelemetry.")})
print(tracing.enabled(), any("opentelemetry" in m for m in settings.MIDDLEWARE), ",".join(loaded))
"""


def started(**env: str) -> list[str]:
    base = {k: v for k, v in child_env().items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**base, **env}, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_without_an_endpoint_nothing_of_opentelemetry_is_set_up_or_imported():
    assert started() == ["False", "False"]


def test_with_an_endpoint_every_part_is_set_up_and_a_disabled_one_is_left_out():
    on, middleware, loaded = started(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    assert (on, middleware) == ("True", "True")
    assert {"sdk", "exporter", "instrumentation"} <= set(loaded.split(","))
    assert started(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="django")[
        :2
    ] == ["True", "False"]
