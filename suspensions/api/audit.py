"""The audit trail for auditors (docs/api.md, "7.14 Audit"): the checkpoints' public key, and the export as JSON
Lines."""

import functools
import json
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import replicas, scopes, selectors
from ..exceptions import Forbidden, InvalidRequest
from ..models import AuditCheckpoint, Event, PrunedRun, Role
from ..principals import Principal
from ..services import audit
from ..wire.answers_audit import AuditCheckpointLine, AuditEventLine, AuditLine, AuditPrunedLine, AuditPublicKeyOut
from . import docs
from .authentication import principal_of
from .filtering import refuse_unknown

NDJSON = "application/x-ndjson"
# Events are read in keyset pages on id: no server-side cursor (PgBouncer may forbid them), flat memory.
PAGE = 2000
EXPORT_PARAMETERS = ("scope", "since")
COLUMNS = ("id", "run_id", "scope", "kind", "actor", "revision", "data", "at", "prev_hash", "hash")


def require_auditor(principal: Principal) -> None:
    if not principal.superuser and not principal.scopes_with(Role.AUDITOR):
        raise Forbidden("the 'auditor' role is required")


class AuditPublicKey(APIView):
    @extend_schema(**docs.operation("get_audit_public_key", ok={200: AuditPublicKeyOut}))
    def get(self, request: Request) -> Response:
        require_auditor(principal_of(request))
        return Response(AuditPublicKeyOut.of(audit.public_key()).wire())


class AuditExport(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("scope", str, description="Only this scope and those below it; one you audit."),
            OpenApiParameter("since", str, description="RFC 3339: only events at or after it."),
        ],
        **docs.operation(
            "export_audit",
            ok={(200, NDJSON): OpenApiResponse(AuditLine, description="One JSON object a line, streamed.")},
        ),
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        principal = principal_of(request)
        require_auditor(principal)
        refuse_unknown(request.query_params, EXPORT_PARAMETERS)  # as the lists do (docs/api.md §9)
        scope, since = export_query(principal, request.query_params)
        events = selectors.audit_events(principal, scope=scope, since=since)
        checkpoints = selectors.audit_checkpoints(selectors.audit_workspaces(principal, scope), since)
        whole = functools.partial(holds_whole, principal, scope)
        streamed = replicas.lagging(lines(events, checkpoints, whole), request)
        response = StreamingHttpResponse(streamed, content_type=NDJSON)
        response["Content-Disposition"] = 'attachment; filename="audit.jsonl"'
        return response


def export_query(principal: Principal, params: Any) -> tuple[str | None, datetime | None]:
    """`scope` and `since`, checked before anything streams: a bad one is a 400, a scope not audited a 403."""
    scope, since_text = params.get("scope") or None, params.get("since") or None
    if scope is not None and not scopes.is_valid(scope):
        raise InvalidRequest("scope is not a valid scope path", errors={"scope": ["Not a valid scope."]})
    if scope is not None and not principal.can(Role.AUDITOR, scope):
        raise Forbidden(f"the 'auditor' role is required in scope '{scope}'")
    since = None
    if since_text is not None:
        try:
            since = parse_datetime(since_text)
        except ValueError:
            since = None
        if since is None or since.tzinfo is None:
            raise InvalidRequest(
                "since must be an RFC 3339 time with its offset", errors={"since": ["Not an RFC 3339 time."]}
            )
    return scope, since


def holds_whole(principal: Principal, scope: str | None, workspace: str) -> bool:
    """Does an export of `scope` hold every run of the chain `workspace` (so every line of its checkpoints)?

    A workspace's chain: when the caller audits the whole workspace and exports it whole. The legacy chain,
    which sealed every tenant's runs: only for a superuser's export of everything.
    """
    if not workspace:
        return principal.superuser and scope is None
    return principal.can(Role.AUDITOR, workspace) and scope in (None, workspace)


def lines(
    events: QuerySet[Event], checkpoints: QuerySet[AuditCheckpoint], whole: Callable[[str], bool]
) -> Iterator[bytes]:
    """The events in id order, then the checkpoints of the exported runs' chains: each with all its lines when
    `whole(workspace)`, else with only the exported runs' lines (then `complete` says whether that is all)."""
    exported: set[str] = set()
    after = 0
    while True:
        page = list(events.filter(id__gt=after).order_by("id").values(*COLUMNS)[:PAGE])
        for row in page:
            exported.add(str(row["run_id"]))
            yield _line(AuditEventLine.of(row).wire())
        if len(page) < PAGE:
            break
        after = page[-1]["id"]
    yield from pruned_lines(exported)
    held = {}
    for checkpoint in checkpoints.iterator(chunk_size=100):
        if checkpoint.workspace not in held:
            held[checkpoint.workspace] = whole(checkpoint.workspace)
        visible = checkpoint.runs if held[checkpoint.workspace] else [r for r in checkpoint.runs if r[0] in exported]
        yield _line(AuditCheckpointLine.of(checkpoint, visible).wire())


def pruned_lines(exported: set[str]) -> Iterator[bytes]:
    """A `pruned` line for each exported run whose first events were pruned, so its kept trail verifies offline."""
    ids = sorted(exported)
    for start in range(0, len(ids), PAGE):
        for pruned in PrunedRun.objects.filter(run_id__in=ids[start : start + PAGE]).order_by("run_id"):
            yield _line(AuditPrunedLine.of(pruned).wire())


def _line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
