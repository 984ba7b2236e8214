"""The REST API: DRF generics for reads, one APIView per write, each calling one service."""

from collections.abc import Callable
from typing import Any, TypeVar
from uuid import UUID

from django.conf import settings
from django.db.models import F, Model, QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_view
from pydantic import ValidationError
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import replicas, selectors, services, wire
from ..exceptions import Forbidden, InvalidRequest, NotFound
from ..filters import AdmissionFilter, RunFilter, SuspensionFilter
from ..models import Admission, Event, Role, Run, Suspension
from ..principals import Principal
from ..wire import requests
from ..wire import requests_operators as operators
from ..wire.answers import (
    AdmissionRowOut,
    Answer,
    ClaimedOut,
    Decision,
    DeniedOut,
    EventOut,
    LatestAdmissionOut,
    PausedOut,
    RegisteredOut,
    ReplayedDecision,
    RunOut,
    RunPausedOut,
    SuspensionOut,
    SuspensionSummaryOut,
    VotedOut,
)
from ..wire.base import MISSING, given
from . import docs
from .authentication import principal_of
from .idempotency import idempotent
from .pagination import AdmittedAtPagination, DeadlinePagination, OldestFirstPagination

# A claim: 201 for the call that did the work, 200 for the identical call again.
CLAIMED = {200: ClaimedOut, 201: ClaimedOut}

Row = TypeVar("Row", bound=Model)
B = TypeVar("B", bound=wire.Body)


def parsed(model: type[B], request: Request) -> B:
    """The body as its model (suspensions/wire), or its refusal: 400 invalid_request naming each field."""
    return parsed_data(model, request.data)


def parsed_data(model: type[B], body: Any) -> B:
    """`parsed` of a body already read: a list of decisions (api/decisions.py) is one."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise InvalidRequest("The request has invalid fields.", errors=wire.field_errors(exc)) from None


def claim_version(v: requests.ClaimVersion) -> services.Version:
    return services.Version(run_id=v.run_id, suspension_id=v.suspension_id, run_revision=v.run_revision)


def drift_guard(body: requests.DriftGuard) -> dict[str, Any]:
    """The version-drift guard's fields of a resume or start body
    (docs/api.md, "Version drift: `engine_version` and `accept_drift`"), as the services take them."""
    return {"engine_version": given(body.engine_version, None), "accept_drift": given(body.accept_drift, False)}


def created(answer: Answer, fresh: bool) -> Response:
    return Response(answer.wire(), status=201 if fresh else 200)


def rows_of_run(view: APIView, rows: Callable[[Principal], QuerySet[Row]], model: type[Row]) -> QuerySet[Row]:
    """The rows of the run `pk` among `rows` (a selector), for a run the principal sees; 404 (leaking nothing) for
    any other run. None for schema generation, which has no principal."""
    if getattr(view, "swagger_fake_view", False):
        return model._default_manager.none()
    principal = principal_of(view.request)
    if not selectors.runs(principal).filter(pk=view.kwargs["pk"]).exists():
        raise NotFound()
    return rows(principal).filter(run_id=view.kwargs["pk"])


# -- runs ---------------------------------------------------------------------


@extend_schema_view(get=extend_schema(**docs.operation("list_runs", ok={200: RunOut})))
class RunList(replicas.LagTolerantGet, generics.ListAPIView):
    filterset_class = RunFilter

    def get_queryset(self) -> QuerySet[Run]:
        return selectors.runs(principal_of(self.request)).annotate(live_suspension_id=F("suspension__id"))

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response([RunOut.of(run).wire() for run in page or []])

    @extend_schema(**docs.operation("register_run", request=requests.RegisterRun, ok={201: RegisteredOut}))
    @idempotent
    def post(self, request: Request) -> Response:
        body = parsed(requests.RegisterRun, request)
        principal = principal_of(request)
        run: dict[str, Any] = {
            "agent_id": body.agent_id,
            "scope": given(body.scope, None),
            "session_id": body.session_id,
        }
        run["tags"] = given(body.tags, ())
        if body.suspend is MISSING:
            registered = services.register_run(principal=principal, **run)
            return Response(RunOut.of(registered).wire(), status=201)
        # docs/api.md, "One call to pause: `POST /runs` with `suspend`": the run and its first pause at once.
        pause = pause_fields(body.suspend, request.data["suspend"])
        paused = services.register_and_pause(principal=principal, pause=pause, **run)
        url = callback_url(request, paused.suspension) if body.suspend.callback is True else None
        return Response(RunPausedOut.of_paused(paused, url).wire(), status=201)


@extend_schema_view(get=extend_schema(**docs.operation("get_run", ok={200: RunOut})))
class RunDetail(generics.RetrieveAPIView):
    def get_queryset(self) -> QuerySet[Run]:
        return selectors.runs(principal_of(self.request)).annotate(live_suspension_id=F("suspension__id"))

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return Response(RunOut.of(self.get_object()).wire())


@extend_schema_view(get=extend_schema(**docs.operation("list_run_events", ok={200: EventOut})))
class RunEvents(generics.ListAPIView):
    pagination_class = OldestFirstPagination

    def get_queryset(self) -> QuerySet[Event]:
        return rows_of_run(self, selectors.events, Event)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([EventOut.of(event).wire() for event in page or []])


def callback_url(request: Request, suspension: Suspension) -> str:
    """The pause's callback URL (docs/api.md, "Callback URLs: `POST /callbacks/{token}`"): on CONSOLE_BASE_URL when it
    is set, else on the request's own host.

    Its built-in default names a laptop's `make run`, no deployment: left at it, the host asked is the better guess.
    """
    return absolute_url(request, reverse("callback", kwargs={"token": services.callback_token(suspension)}))


def absolute_url(request: Request, path: str) -> str:
    """`path` on CONSOLE_BASE_URL when it is set, else on the request's own host (see `callback_url`)."""
    base = settings.CONSOLE_BASE_URL
    return request.build_absolute_uri(path) if base == settings.CONSOLE_BASE_URL_DEFAULT else f"{base}{path}"


def pause_fields(body: requests.Pause, raw: dict[str, Any]) -> dict[str, Any]:
    """A pause's keywords for services.pause_run, but the run and its revision. Stored as given: the raw objects of
    `pending`, `continuation` and `approval`, not the model's copy."""
    return {
        "reason": body.reason,
        "pending": raw["pending"],
        "continuation": raw["continuation"],
        "ttl_seconds": given(body.ttl_seconds, None),
        "approval": raw.get("approval"),
        "engine_version": given(body.engine_version, ""),
        "tags": given(body.tags, ()),
    }


class Suspend(APIView):
    @extend_schema(**docs.operation("suspend_run", request=requests.Suspend, ok={201: PausedOut}))
    def post(self, request: Request, pk: UUID) -> Response:
        body = parsed(requests.Suspend, request)
        pause = pause_fields(body, request.data)
        paused = services.pause_run(principal=principal_of(request), run_id=pk, revision=body.revision, **pause)
        url = callback_url(request, paused.suspension) if body.callback is True else None
        return Response(PausedOut.of_paused(paused, url).wire(), status=201)


class Resume(APIView):
    @extend_schema(**docs.operation("resume_run", request=requests.Resume, ok=CLAIMED))
    def post(self, request: Request, pk: UUID) -> Response:
        body = parsed(requests.Resume, request)
        claimed = services.resume_run(
            principal=principal_of(request),
            run_id=pk,
            version=claim_version(body.version),
            results=request.data["results"],  # kept as sent: the digest binds the exact results
            **drift_guard(body),
        )
        return created(ClaimedOut.of(claimed), claimed.fresh)


class Complete(APIView):
    @extend_schema(**docs.operation("complete_run", request=requests.Revision, ok={200: RunOut}))
    def post(self, request: Request, pk: UUID) -> Response:
        revision = parsed(requests.Revision, request).revision
        run = services.complete_run(principal=principal_of(request), run_id=pk, revision=revision)
        return Response(RunOut.of(run).wire())


class Fail(APIView):
    @extend_schema(**docs.operation("fail_run", request=requests.Fail, ok={200: RunOut}))
    def post(self, request: Request, pk: UUID) -> Response:
        body = parsed(requests.Fail, request)
        run = services.fail_run(principal=principal_of(request), run_id=pk, revision=body.revision, error=body.error)
        return Response(RunOut.of(run).wire())


class Cancel(APIView):
    @extend_schema(**docs.operation("cancel_run", request=requests.Revision, ok={200: RunOut}))
    def post(self, request: Request, pk: UUID) -> Response:
        revision = parsed(requests.Revision, request).revision
        run = services.cancel_run(principal=principal_of(request), run_id=pk, revision=revision)
        return Response(RunOut.of(run).wire())


# -- suspensions and approvals --------------------------------------------------


@extend_schema_view(get=extend_schema(**docs.operation("list_suspensions", ok={200: SuspensionSummaryOut})))
class SuspensionList(replicas.LagTolerantGet, generics.ListAPIView):
    filterset_class = SuspensionFilter
    pagination_class = DeadlinePagination

    def get_queryset(self) -> QuerySet[Suspension]:
        return selectors.suspensions(principal_of(self.request))

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response([SuspensionSummaryOut.of(x).wire() for x in page or []])


class SuspensionDetail(APIView):
    @extend_schema(**docs.operation("get_suspension", ok={200: SuspensionOut}))
    def get(self, request: Request, pk: UUID) -> Response:
        susp = selectors.suspensions(principal_of(request)).filter(pk=pk).first()
        if susp is None:
            raise NotFound()
        return Response(SuspensionOut.of(susp).wire())


class ExtendDeadline(APIView):
    """More time for a live pause (docs/api.md, "`POST /suspensions/{id}/extend` — more time"): role operator."""

    @extend_schema(**docs.operation("extend_suspension", request=operators.ExtendDeadline, ok={200: SuspensionOut}))
    @idempotent
    def post(self, request: Request, pk: UUID) -> Response:
        body = parsed(operators.ExtendDeadline, request)
        extended = services.extend_deadline(
            principal=principal_of(request),
            suspension_id=pk,
            reason=body.reason,
            seconds=given(body.seconds, None),
            until=given(body.until, None),
        )
        return Response(SuspensionOut.of(extended.suspension).wire())


@extend_schema_view(get=extend_schema(**docs.operation("list_approvals", ok={200: SuspensionSummaryOut})))
class ApprovalList(SuspensionList):
    def get_queryset(self) -> QuerySet[Suspension]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no principal
            return Suspension.objects.none()
        principal = principal_of(self.request)
        if not principal.superuser and not principal.scopes_with("approver", "auditor"):
            raise Forbidden("the 'approver' or 'auditor' role is required")
        return selectors.pending_approvals(principal)


class Decide(APIView):
    @extend_schema(
        **docs.operation(
            "decide_approval", request=requests.Decide, ok={200: ReplayedDecision, 201: Decision, 202: VotedOut}
        )
    )
    def post(self, request: Request, pk: UUID) -> Response:
        status, body = decide(principal_of(request), pk, parsed(requests.Decide, request))
        return Response(body, status=status)


def decide(principal: Principal, pk: UUID, body: requests.Decide) -> tuple[int, dict[str, Any]]:
    """A single decide's status and body, for the approval `pk` and its parsed body; a list of decisions
    (api/decisions.py) calls it for each item. Refusals are raised."""
    calls = None if body.calls is MISSING else [{"id": c.id, "arguments": c.arguments} for c in body.calls]
    decision = services.decide(
        principal=principal,
        suspension_id=pk,
        version=claim_version(body.version),
        decision=body.decision,
        reason=given(body.reason, ""),
        response=given(body.response, ""),
        calls=calls,
        acting_for=given(body.acting_for, ""),
    )
    if isinstance(decision, services.Denied):
        return (201 if decision.fresh else 200), DeniedOut.of(decision).wire()
    if isinstance(decision, services.Voted):
        # Short of the quorum: accepted, the run still waits; the same vote again is a replay (200).
        return (202 if decision.fresh else 200), VotedOut.of(decision).wire()
    return (201 if decision.fresh else 200), ClaimedOut.of(decision).wire()


# -- admissions and starts --------------------------------------------------------


def admission_rows(page: Any) -> list[dict[str, Any]]:
    return [AdmissionRowOut.of(a).wire() for a in page or []]


@extend_schema_view(get=extend_schema(**docs.operation("list_run_admissions", ok={200: AdmissionRowOut})))
class RunAdmissions(generics.ListAPIView):
    pagination_class = OldestFirstPagination

    def get_queryset(self) -> QuerySet[Admission]:
        return rows_of_run(self, selectors.admissions, Admission)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.get_paginated_response(admission_rows(self.paginate_queryset(self.get_queryset())))

    @extend_schema(**docs.operation("admit_agent_reply", request=requests.Admit, ok=CLAIMED))
    def post(self, request: Request, pk: UUID) -> Response:
        body = parsed(requests.Admit, request)
        claimed = services.admit_reply(
            principal=principal_of(request),
            run_id=pk,
            version=claim_version(body.version),
            input=body.input,
            reply_with=body.reply_with,
        )
        return created(ClaimedOut.of(claimed), claimed.fresh)


class LatestAdmission(APIView):
    @extend_schema(**docs.operation("get_latest_admission", ok={200: LatestAdmissionOut}))
    def get(self, request: Request, pk: UUID) -> Response:
        latest, start = selectors.latest_admission(principal_of(request), pk)
        if latest is None:
            raise NotFound()
        return Response(LatestAdmissionOut.of_latest(latest, start).wire())


@extend_schema_view(get=extend_schema(**docs.operation("list_admissions", ok={200: AdmissionRowOut})))
class AdmissionList(replicas.LagTolerantGet, generics.ListAPIView):
    """Admitted work waiting for a start: the engine's queue (docs/api.md, "7.4 Admissions and starts";
    docs/decisions.md, "Trust boundaries"), only where it is an engine.

    A role-only list checks its role like the writes; auditors read a run's
    admissions under /runs/{id}/admissions instead.
    """

    filterset_class = AdmissionFilter
    pagination_class = AdmittedAtPagination

    def get_queryset(self) -> QuerySet[Admission]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no principal
            return Admission.objects.none()
        principal = principal_of(self.request)
        if not principal.superuser and not principal.scopes_with(Role.ENGINE):
            raise Forbidden("the 'engine' role is required")
        return selectors.admissions(principal).filter(principal.scope_q(Role.ENGINE))

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(admission_rows(page))


class StartAdmission(APIView):
    @extend_schema(**docs.operation("start_admission", request=requests.Start, ok={201: ClaimedOut}))
    def post(self, request: Request, pk: UUID) -> Response:
        # No body, null or {}: no fields; else only the drift guard's, anything else refused before the start.
        body = parsed(requests.Start, request) if request.data not in (None, {}) else requests.Start()
        claimed = services.start_admission(principal=principal_of(request), admission_id=pk, **drift_guard(body))
        return created(ClaimedOut.of(claimed), True)
