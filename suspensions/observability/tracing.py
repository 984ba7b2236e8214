"""Traces with OpenTelemetry (docs/deploy.md, "Traces"): one approval followed from the request that decides it
through the claim, the fan-out and the delivery into the receiving engine's own trace.

Set up only when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set: then every
process (web, worker, beat, a management command) exports its spans by OTLP/HTTP (protobuf) in batches, and

- each HTTP request is a span (opentelemetry-instrumentation-django), continuing the caller's W3C
  `traceparent`; its path redacted as in the logs (redact.py: a capability path never leaves the process);
- each SQL statement is a span (opentelemetry-instrumentation-psycopg; the statement's text, never its values);
- the claim's transaction is a span (`claim <Door>`, around services.claiming.through) with the run, the pause,
  the events written and, for a decision, the decision, the approver and the wait (seconds from the pause to
  the decision);
- each Celery task is published and run as spans (opentelemetry-instrumentation-celery), the trace context
  carried in the task message's headers; the fan-out's wake-up, sent by a thread of its own for the ids of
  several commits (services/wakeups.py), is sent in the first commit's context and links the others;
- each webhook POST is a span (`webhook POST`), the child of the transition that announced its event (the
  context is stored with the outbox row and copied to the message), and carries that span's `traceparent`
  header, so the receiving engine's trace continues. The header is not signed (standardwebhooks signs the id,
  the timestamp and the body).

Unset, nothing is set up and nothing of OpenTelemetry is imported: each hook below returns at its first
test of `_tracer` (docs/performance.md, "Traces").
"""

import functools
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from . import redact

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

P = ParamSpec("P")
R = TypeVar("R")

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
SERVICE_NAME = "suspensions"
# Requests that say nothing about an approval (probes, the metrics scrape): no span, unless
# OTEL_PYTHON_DJANGO_EXCLUDED_URLS says otherwise.
EXCLUDED_URLS = "healthz,readyz,metrics,static/"
# The request span's attributes that hold its path (old and stable HTTP conventions): redacted (redact.py).
URL_ATTRIBUTES = ("http.target", "http.url", "url.full", "url.path", "url.query")
# The W3C header (https://www.w3.org/TR/trace-context/): 55 characters for version 00.
TRACEPARENT = "traceparent"

# Span attributes of the service's own (docs/deploy.md, "Traces").
RUN = "suspensions.run_id"
PAUSE = "suspensions.pause_id"
DOOR = "suspensions.door"
EVENTS = "suspensions.events"
DECISION = "suspensions.decision"
APPROVER = "suspensions.approver"
WAIT = "suspensions.wait_seconds"
REFUSAL = "suspensions.refusal"

_tracer: "Tracer | None" = None
_provider: "TracerProvider | None" = None


def enabled() -> bool:
    return _tracer is not None


def configured() -> bool:
    """Whether this process's environment asks for traces."""
    return any(os.environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def setup_from_environment() -> bool:
    """Export traces by OTLP when the environment names an endpoint; nothing otherwise. Whether it set up.

    Called once per process when Django's apps are ready (suspensions/apps.py): before the web's middleware
    is loaded, and in a Celery worker's parent before its children are forked (the batch processor starts
    its thread again in each child).
    """
    if _tracer is not None or not configured():
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER and the exporter's OTEL_EXPORTER_OTLP_*
    # (headers, timeout, compression) are read by the SDK itself.
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "") or SERVICE_NAME})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    install(provider)
    return True


def install(provider: "TracerProvider") -> None:
    """Instrument Django, Celery and psycopg with `provider` and start the service's own spans.

    The global tracer provider is left alone: the tests install an in-memory one and take it away again.
    """
    global _tracer, _provider
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    # As opentelemetry-instrument reads it: entry point names, comma-separated.
    disabled = {n.strip() for n in os.environ.get("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "").split(",")}
    if "django" not in disabled:
        excluded = os.environ.get("OTEL_PYTHON_DJANGO_EXCLUDED_URLS") or EXCLUDED_URLS
        DjangoInstrumentor().instrument(tracer_provider=provider, request_hook=_redact_request, excluded_urls=excluded)
    if "celery" not in disabled:
        CeleryInstrumentor().instrument(tracer_provider=provider)
    if "psycopg" not in disabled:
        PsycopgInstrumentor().instrument(tracer_provider=provider, skip_dep_check=True)
    _provider = provider
    _tracer = provider.get_tracer(SERVICE_NAME)


def uninstall() -> None:
    """Undo `install` (the tests' in-memory provider); spans already ended stay with their exporter."""
    global _tracer, _provider
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    for instrumentor in (DjangoInstrumentor(), CeleryInstrumentor(), PsycopgInstrumentor()):
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()
    _tracer = _provider = None


def flush(timeout_millis: int = 5000) -> None:
    """Export what is waiting now (a test reads its receiver; a process that is about to exit)."""
    if _provider is not None:
        _provider.force_flush(timeout_millis)


def _redact_request(span: "Span", request: Any) -> None:
    """The request's URL attributes as the logs show them: a capability path ends `<redacted>`, wherever it is."""
    if not span.is_recording():
        return
    recorded = getattr(span, "attributes", None) or {}
    for key in URL_ATTRIBUTES:
        value = recorded.get(key)
        if isinstance(value, str):
            span.set_attribute(key, redact.text(value))


# -- the claim's transaction -----------------------------------------------------------------------


def claim_span(through: Callable[P, R]) -> Callable[P, R]:
    """services.claiming.through in a span `claim <Door>`: the transaction, its lock and its writes.

    The hooks below (`transition`, `decided`) add the run, the pause and the decision as the door writes
    them. A refusal (a client's 4xx) is an attribute, not an error: the span's status stays unset.
    """

    @functools.wraps(through)
    def traced(*args: P.args, **kwargs: P.kwargs) -> R:
        if _tracer is None:
            return through(*args, **kwargs)
        door = args[0] if args else kwargs.get("door")
        attributes = {DOOR: type(door).__name__}
        if kwargs.get("run_id") is not None:
            attributes[RUN] = str(kwargs["run_id"])
        with _tracer.start_as_current_span(
            f"claim {type(door).__name__}", attributes=attributes, record_exception=False, set_status_on_exception=False
        ) as span:
            try:
                return through(*args, **kwargs)
            except Exception as exc:
                _refused_or_failed(span, exc)
                raise

    return traced


def _refused_or_failed(span: "Span", exc: Exception) -> None:
    from opentelemetry.trace import Status, StatusCode

    status = getattr(exc, "status", 500)
    if isinstance(status, int) and status < 500:
        span.set_attribute(REFUSAL, str(getattr(exc, "code", type(exc).__name__)))
        return
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, type(exc).__name__))


def transition(rows: Sequence[Any]) -> None:
    """The events a transition writes (claims.write_events), on the current span: its run, its pause, their kinds."""
    if _tracer is None or not rows:
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    if not span.is_recording():
        return
    span.set_attribute(RUN, str(rows[0].run_id))
    pause = next((r.data["suspension_id"] for r in rows if "suspension_id" in r.data), None)
    if pause:
        span.set_attribute(PAUSE, str(pause))
    span.set_attribute(EVENTS, ",".join(r.kind for r in rows))


def decided(pause: Any, decision: str, approver: str, at: datetime) -> None:
    """A pause's approval decided at `at` (claims.resolve_approval), on the current span: the decision, by whom,
    and the wait: seconds from the pause to the decision."""
    if _tracer is None:
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    if not span.is_recording():
        return
    span.set_attribute(PAUSE, str(pause.id))
    span.set_attribute(DECISION, str(decision))
    span.set_attribute(APPROVER, approver)
    span.set_attribute(WAIT, round((at - pause.created_at).total_seconds(), 3))


# -- the trace context carried by rows and wake-ups -------------------------------------------------


def traceparent() -> str:
    """The current span's W3C `traceparent`, to store with a row (an outbox event, its webhook messages); ''
    when traces are off or no span is being recorded."""
    if _tracer is None:
        return ""
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier.get(TRACEPARENT, "")


def current_context() -> "Context | None":
    """The current context, to send something later in it (a wake-up); None when traces are off."""
    if _tracer is None:
        return None
    from opentelemetry import context

    return context.get_current()


@contextmanager
def sending(contexts: list["Context | None"], name: str) -> Iterator[None]:
    """A span `name` in the first of `contexts` (their commits' contexts), linking the others: what it sends (a
    Celery task) is published in it, so one commit's trace goes on into the task and the others are linked."""
    if _tracer is None or not contexts:
        yield
        return
    from opentelemetry import trace
    from opentelemetry.trace import Link

    spans = [trace.get_current_span(c) for c in contexts if c is not None]
    spans = [span for span in spans if span.get_span_context().is_valid]  # a commit outside any span has none
    if not spans:
        yield
        return
    parent = trace.set_span_in_context(spans[0])
    seen, links = {spans[0].get_span_context().trace_id}, []
    for other in spans[1:]:
        if other.get_span_context().trace_id not in seen:
            seen.add(other.get_span_context().trace_id)
            links.append(Link(other.get_span_context()))
    with _tracer.start_as_current_span(name, context=parent, links=links):
        yield


@contextmanager
def webhook_post(stored: str, attributes: dict[str, Any]) -> Iterator[dict[str, str]]:
    """A client span `webhook POST` around one send; yields the headers to add (its `traceparent`), none when off.

    Its parent is the transition that announced the message (`stored`, the message's traceparent) when that
    is another trace than the delivery task's (a task sends the messages of many transitions), linking the
    task's span; else the task's span itself.
    """
    if _tracer is None:
        yield {}
        return
    from opentelemetry import propagate, trace
    from opentelemetry.trace import Link, SpanKind

    current = trace.get_current_span().get_span_context()
    parent, links = None, []
    if stored:
        announced = trace.get_current_span(propagate.extract({TRACEPARENT: stored})).get_span_context()
        if announced.is_valid and announced.trace_id != current.trace_id:
            parent = trace.set_span_in_context(trace.NonRecordingSpan(announced))
            links = [Link(current)] if current.is_valid else []
    with _tracer.start_as_current_span(
        "webhook POST", context=parent, kind=SpanKind.CLIENT, links=links, attributes=attributes
    ):
        headers: dict[str, str] = {}
        propagate.inject(headers)
        yield headers


def answered(status_code: int | None, error: str) -> None:
    """The outcome of the webhook POST whose span is current: its status code, or its error."""
    if _tracer is None:
        return
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    span = trace.get_current_span()
    if status_code is not None:
        span.set_attribute("http.response.status_code", status_code)
    if status_code is None or status_code >= 400:
        span.set_status(Status(StatusCode.ERROR, error[:200] or f"HTTP {status_code}"))
