"""The REST API: DRF generics for reads, one APIView per write, each calling one service."""

from collections.abc import Callable
from typing import Any, TypeVar
from uuid import UUID

from django.conf import settings
from django.db.models import F, Model, QuerySet
from django.urls import reverse
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema, extend_schema_view
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import presenters, selectors, services
from ..exceptions import Forbidden, NotFound
from ..filters import AdmissionFilter, RunFilter, SuspensionFilter
from ..models import Admission, Event, Role, Run, Suspension
from ..principals import Principal
from . import bodies, docs, shapes
from . import serializers as s
from .authentication import principal_of
from .idempotency import idempotent
from .pagination import AdmittedAtPagination, DeadlinePagination, OldestFirstPagination

DECISION = PolymorphicProxySerializer("Decision", [shapes.ClaimedOut, shapes.DeniedOut], resource_type_field_name=None)
# 200 also answers the same approver's vote again while the quorum is not reached (fresh false).
REPLAYED = PolymorphicProxySerializer(
    "ReplayedDecision", [shapes.ClaimedOut, shapes.DeniedOut, shapes.VotedOut], resource_type_field_name=None
)
# A claim: 201 for the call that did the work, 200 for the identical call again.
CLAIMED = {200: shapes.ClaimedOut, 201: shapes.ClaimedOut}

Row = TypeVar("Row", bound=Model)


def validated(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """The body's validated data: a hot body's flat check first (api.bodies), else its serializer."""
    check = bodies.CHECKS.get(serializer_class)
    if check is not None:
        data = bodies.plainly(check, request.data)
        if data is not None:
            return data
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data  # type: ignore[return-value]


def version_of(data: dict[str, Any]) -> services.Version:
    v = data["version"]
    return services.Version(run_id=v["run_id"], suspension_id=v["suspension_id"], run_revision=v["run_revision"])


def drift_guard(data: dict[str, Any]) -> dict[str, Any]:
    """The version-drift guard's fields of a resume or start body
    (docs/api.md, "Version drift: `engine_version` and `accept_drift`"), as the services take them."""
    return {"engine_version": data.get("engine_version"), "accept_drift": data.get("accept_drift", False)}


def created(body: dict[str, Any], fresh: bool) -> Response:
    return Response(body, status=201 if fresh else 200)


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


@extend_schema_view(get=extend_schema(**docs.operation("list_runs", ok={200: shapes.RunOut})))
class RunList(generics.ListAPIView):
    serializer_class = shapes.RunOut
    filterset_class = RunFilter

    def get_queryset(self) -> QuerySet[Run]:
        return selectors.runs(principal_of(self.request)).annotate(live_suspension_id=F("suspension__id"))

    @extend_schema(**docs.operation("register_run", request=s.RegisterRun, ok={201: shapes.RunOut}))
    @idempotent
    def post(self, request: Request) -> Response:
        data = validated(s.RegisterRun, request)
        run = services.register_run(principal=principal_of(request), **data)
        return Response(presenters.run_body(run), status=201)


@extend_schema_view(get=extend_schema(**docs.operation("get_run", ok={200: shapes.RunOut})))
class RunDetail(generics.RetrieveAPIView):
    serializer_class = shapes.RunOut

    def get_queryset(self) -> QuerySet[Run]:
        return selectors.runs(principal_of(self.request)).annotate(live_suspension_id=F("suspension__id"))


@extend_schema_view(get=extend_schema(**docs.operation("list_run_events", ok={200: shapes.EventOut})))
class RunEvents(generics.ListAPIView):
    serializer_class = shapes.EventOut
    pagination_class = OldestFirstPagination

    def get_queryset(self) -> QuerySet[Event]:
        return rows_of_run(self, selectors.events, Event)


def callback_url(request: Request, suspension: Suspension) -> str:
    """The pause's callback URL (docs/api.md, "Callback URLs: `POST /callbacks/{token}`"): on CONSOLE_BASE_URL when it
    is set, else on the request's own host.

    Its built-in default names a laptop's `make run`, no deployment: left at it, the host asked is the better guess.
    """
    path = reverse("callback", kwargs={"token": services.callback_token(suspension)})
    base = settings.CONSOLE_BASE_URL
    return request.build_absolute_uri(path) if base == settings.CONSOLE_BASE_URL_DEFAULT else f"{base}{path}"


class Suspend(APIView):
    @extend_schema(**docs.operation("suspend_run", request=s.Suspend, ok={201: shapes.PausedOut}))
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.Suspend, request)
        raw = request.data
        # Stored as given: the raw objects, not DRF's re-shaped copy.
        paused = services.pause_run(
            principal=principal_of(request),
            run_id=pk,
            revision=data["revision"],
            reason=data["reason"],
            pending=raw["pending"],
            continuation=raw["continuation"],
            ttl_seconds=data.get("ttl_seconds"),
            approval=raw.get("approval"),
            engine_version=data.get("engine_version", ""),
            tags=data.get("tags", ()),
        )
        url = callback_url(request, paused.suspension) if data.get("callback") else None
        return Response(presenters.paused_body(paused, url), status=201)


class Resume(APIView):
    @extend_schema(**docs.operation("resume_run", request=s.Resume, ok=CLAIMED))
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.Resume, request)
        claimed = services.resume_run(
            principal=principal_of(request),
            run_id=pk,
            version=version_of(data),
            results=data["results"],
            **drift_guard(data),
        )
        return created(presenters.claimed_body(claimed), claimed.fresh)


class Complete(APIView):
    @extend_schema(**docs.operation("complete_run", request=s.Revision, ok={200: shapes.RunOut}))
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.Revision, request)
        return Response(presenters.run_body(services.complete_run(principal=principal_of(request), run_id=pk, **data)))


class Fail(APIView):
    @extend_schema(**docs.operation("fail_run", request=s.Fail, ok={200: shapes.RunOut}))
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.Fail, request)
        return Response(presenters.run_body(services.fail_run(principal=principal_of(request), run_id=pk, **data)))


class Cancel(APIView):
    @extend_schema(**docs.operation("cancel_run", request=s.Revision, ok={200: shapes.RunOut}))
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.Revision, request)
        return Response(presenters.run_body(services.cancel_run(principal=principal_of(request), run_id=pk, **data)))


# -- suspensions and approvals --------------------------------------------------


@extend_schema_view(get=extend_schema(**docs.operation("list_suspensions", ok={200: shapes.SuspensionSummaryOut})))
class SuspensionList(generics.ListAPIView):
    serializer_class = shapes.SuspensionSummaryOut
    filterset_class = SuspensionFilter
    pagination_class = DeadlinePagination

    def get_queryset(self) -> QuerySet[Suspension]:
        return selectors.suspensions(principal_of(self.request))

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response([presenters.suspension_summary(x) for x in page or []])


class SuspensionDetail(APIView):
    @extend_schema(**docs.operation("get_suspension", ok={200: shapes.SuspensionOut}))
    def get(self, request: Request, pk: UUID) -> Response:
        susp = selectors.suspensions(principal_of(request)).filter(pk=pk).first()
        if susp is None:
            raise NotFound()
        return Response(presenters.suspension_detail(susp))


class ExtendDeadline(APIView):
    """More time for a live pause (docs/api.md, "`POST /suspensions/{id}/extend` — more time"): role operator."""

    @extend_schema(**docs.operation("extend_suspension", request=s.ExtendDeadline, ok={200: shapes.SuspensionOut}))
    @idempotent
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.ExtendDeadline, request)
        extended = services.extend_deadline(
            principal=principal_of(request),
            suspension_id=pk,
            reason=data["reason"],
            seconds=data.get("seconds"),
            until=data.get("until"),
        )
        return Response(presenters.suspension_detail(extended.suspension))


@extend_schema_view(get=extend_schema(**docs.operation("list_approvals", ok={200: shapes.SuspensionSummaryOut})))
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
        **docs.operation("decide_approval", request=s.Decide, ok={200: REPLAYED, 201: DECISION, 202: shapes.VotedOut})
    )
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.Decide, request)
        decision = services.decide(
            principal=principal_of(request),
            suspension_id=pk,
            version=version_of(data),
            decision=data["decision"],
            reason=data.get("reason", ""),
            response=data.get("response", ""),
            calls=data.get("calls"),
        )
        if isinstance(decision, services.Denied):
            return created(presenters.denied_body(decision), decision.fresh)
        if isinstance(decision, services.Voted):
            # Short of the quorum: accepted, the run still waits; the same vote again is a replay (200).
            return Response(presenters.voted_body(decision), status=202 if decision.fresh else 200)
        return created(presenters.claimed_body(decision), decision.fresh)


# -- admissions and starts --------------------------------------------------------


def admission_rows(page: Any) -> list[dict[str, Any]]:
    return [presenters.admission_row(a) for a in page or []]


@extend_schema_view(get=extend_schema(**docs.operation("list_run_admissions", ok={200: shapes.AdmissionReceiptOut})))
class RunAdmissions(generics.ListAPIView):
    serializer_class = shapes.AdmissionReceiptOut
    pagination_class = OldestFirstPagination

    def get_queryset(self) -> QuerySet[Admission]:
        return rows_of_run(self, selectors.admissions, Admission)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.get_paginated_response(admission_rows(self.paginate_queryset(self.get_queryset())))

    @extend_schema(**docs.operation("admit_agent_reply", request=s.Admit, ok=CLAIMED))
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.Admit, request)
        claimed = services.admit_reply(
            principal=principal_of(request),
            run_id=pk,
            version=version_of(data),
            input=data["input"],
            reply_with=data["reply_with"],
        )
        return created(presenters.claimed_body(claimed), claimed.fresh)


class LatestAdmission(APIView):
    @extend_schema(**docs.operation("get_latest_admission", ok={200: shapes.LatestAdmissionOut}))
    def get(self, request: Request, pk: UUID) -> Response:
        latest, start = selectors.latest_admission(principal_of(request), pk)
        if latest is None:
            raise NotFound()
        body = presenters.admission_row(latest)
        body["start"] = presenters.start_receipt(start) if start else None
        return Response(body)


@extend_schema_view(get=extend_schema(**docs.operation("list_admissions", ok={200: shapes.AdmissionReceiptOut})))
class AdmissionList(generics.ListAPIView):
    """Admitted work waiting for a start: the engine's queue (docs/api.md, "7.4 Admissions and starts";
    docs/decisions.md, "Trust boundaries"), only where it is an engine.

    A role-only list checks its role like the writes; auditors read a run's
    admissions under /runs/{id}/admissions instead.
    """

    serializer_class = shapes.AdmissionReceiptOut
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
    @extend_schema(**docs.operation("start_admission", request=s.Start, ok={201: shapes.ClaimedOut}))
    def post(self, request: Request, pk: UUID) -> Response:
        # No body, null or {}: no fields; else only the drift guard's, anything else refused before the start.
        data = validated(s.Start, request) if request.data not in (None, {}) else {}
        claimed = services.start_admission(principal=principal_of(request), admission_id=pk, **drift_guard(data))
        return created(presenters.claimed_body(claimed), True)
