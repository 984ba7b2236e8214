"""The REST API: DRF generics for reads, one APIView per write, each calling one service."""

import json
from typing import Any
from uuid import UUID

from django.db.models import F, QuerySet
from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import digests, selectors, services
from ..exceptions import Forbidden, InvalidRequest, NotFound
from ..models import Admission, Event, Role, Run, Suspension
from . import serializers as s
from .authentication import principal_of
from .filters import AdmissionFilter, RunFilter, SuspensionFilter
from .pagination import AdmittedAtPagination, DeadlinePagination, OldestFirstPagination

PROBLEM = OpenApiResponse(description="application/problem+json error")
ERRORS = {
    400: PROBLEM,
    401: PROBLEM,
    403: PROBLEM,
    404: PROBLEM,
    409: PROBLEM,
    410: PROBLEM,
    413: PROBLEM,
    422: PROBLEM,
}
DECISION = PolymorphicProxySerializer("Decision", [s.ClaimedOut, s.DeniedOut], resource_type_field_name=None)
CLAIMED = {200: s.ClaimedOut, 201: s.ClaimedOut, **ERRORS}


def validated(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data  # type: ignore[return-value]


def version_of(data: dict[str, Any]) -> services.Version:
    v = data["version"]
    return services.Version(run_id=v["run_id"], suspension_id=v["suspension_id"], run_revision=v["run_revision"])


def check_run_matches(run_id: UUID, version: services.Version) -> None:
    if version.run_id != run_id:
        raise InvalidRequest(
            "version.run_id must be the run in the path", errors={"version": {"run_id": ["Mismatch."]}}
        )


def created(body: dict[str, Any], fresh: bool) -> Response:
    return Response(body, status=201 if fresh else 200)


def run_body(run: Run) -> dict[str, Any]:
    return s.RunOut(run).data  # type: ignore[return-value]


def suspension_summary(susp: Suspension) -> dict[str, Any]:
    """A list row: the pause without its (possibly large) continuation."""
    return {
        "id": str(susp.id),
        "run_id": str(susp.run_id),
        "scope": susp.scope,
        "agent_id": susp.run.agent_id,
        "reason": susp.reason,
        "pending": json.loads(susp.pending),
        "expires_at": digests.rfc3339(susp.expires_at),
        "created_at": digests.rfc3339(susp.created_at),
        "run_revision": susp.run.revision,
        "run_state": susp.run.state,
        "correlation_id": susp.correlation_id or None,
    }


def claimed_body(claimed: services.Claimed) -> dict[str, Any]:
    body: dict[str, Any] = {
        "run_id": str(claimed.run.id),
        "run_revision": claimed.run.revision,
        "run_state": claimed.run.state,
    }
    if claimed.admission is not None:
        body["admission"] = services.admission_receipt(claimed.admission, fresh=claimed.fresh)
    if claimed.start is not None:
        body["start"] = services.start_receipt(claimed.start)
    body["fresh"] = claimed.fresh
    # Only a fresh claim that granted execution carries the pause and its input.
    if claimed.fresh and claimed.suspension is not None:
        body["suspension"] = services.suspension_body(claimed.suspension)
        if claimed.results is not None:
            body["results"] = claimed.results
        elif claimed.admission is not None:
            body["input"] = claimed.admission.input
    return body


# -- runs ---------------------------------------------------------------------


class RunList(generics.ListAPIView):
    serializer_class = s.RunOut
    filterset_class = RunFilter

    def get_queryset(self) -> QuerySet[Run]:
        return selectors.runs(principal_of(self.request)).annotate(live_suspension_id=F("suspension__id"))

    @extend_schema(request=s.RegisterRun, responses={201: s.RunOut, **ERRORS})
    def post(self, request: Request) -> Response:
        data = validated(s.RegisterRun, request)
        run = services.register_run(principal=principal_of(request), **data)
        return Response(run_body(run), status=201)


class RunDetail(generics.RetrieveAPIView):
    serializer_class = s.RunOut

    def get_queryset(self) -> QuerySet[Run]:
        return selectors.runs(principal_of(self.request)).annotate(live_suspension_id=F("suspension__id"))


class RunEvents(generics.ListAPIView):
    serializer_class = s.EventOut
    pagination_class = OldestFirstPagination

    def get_queryset(self) -> QuerySet[Event]:
        if getattr(self, "swagger_fake_view", False):
            return Event.objects.none()
        principal = principal_of(self.request)
        if not selectors.runs(principal).filter(pk=self.kwargs["pk"]).exists():
            raise NotFound()
        return selectors.events(principal).filter(run_id=self.kwargs["pk"])


class Suspend(APIView):
    @extend_schema(request=s.Suspend, responses={201: s.SuspensionOut, **ERRORS})
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.Suspend, request)
        raw = request.data
        # Stored as given: the raw objects, not DRF's re-shaped copy.
        suspension = services.suspend_run(
            principal=principal_of(request),
            run_id=pk,
            revision=data["revision"],
            reason=data["reason"],
            pending=raw["pending"],
            continuation=raw["continuation"],
            ttl_seconds=data.get("ttl_seconds"),
        )
        return Response({**services.suspension_body(suspension), "run_revision": suspension.run.revision}, status=201)


class Resume(APIView):
    @extend_schema(request=s.Resume, responses=CLAIMED)
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.Resume, request)
        version = version_of(data)
        check_run_matches(pk, version)
        claimed = services.resume_run(
            principal=principal_of(request), run_id=pk, version=version, results=data["results"]
        )
        return created(claimed_body(claimed), claimed.fresh)


class Complete(APIView):
    @extend_schema(request=s.Revision, responses={200: s.RunOut, **ERRORS})
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.Revision, request)
        return Response(run_body(services.complete_run(principal=principal_of(request), run_id=pk, **data)))


class Fail(APIView):
    @extend_schema(request=s.Fail, responses={200: s.RunOut, **ERRORS})
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.Fail, request)
        return Response(run_body(services.fail_run(principal=principal_of(request), run_id=pk, **data)))


class Cancel(APIView):
    @extend_schema(request=s.Revision, responses={200: s.RunOut, **ERRORS})
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.Revision, request)
        return Response(run_body(services.cancel_run(principal=principal_of(request), run_id=pk, **data)))


# -- suspensions and approvals --------------------------------------------------


class SuspensionList(generics.ListAPIView):
    serializer_class = s.SuspensionSummaryOut
    filterset_class = SuspensionFilter
    pagination_class = DeadlinePagination

    def get_queryset(self) -> QuerySet[Suspension]:
        return selectors.suspensions(principal_of(self.request))

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response([suspension_summary(x) for x in page or []])


class SuspensionDetail(APIView):
    @extend_schema(responses={200: s.SuspensionOut, **ERRORS})
    def get(self, request: Request, pk: UUID) -> Response:
        susp = selectors.suspensions(principal_of(request)).filter(pk=pk).first()
        if susp is None:
            raise NotFound()
        return Response(
            {**services.suspension_body(susp), "run_revision": susp.run.revision, "run_state": susp.run.state}
        )


class ApprovalList(SuspensionList):
    def get_queryset(self) -> QuerySet[Suspension]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no principal
            return Suspension.objects.none()
        principal = principal_of(self.request)
        if not principal.superuser and not principal.scopes_with("approver", "auditor"):
            raise Forbidden("the 'approver' or 'auditor' role is required")
        return selectors.pending_approvals(principal)


class Decide(APIView):
    @extend_schema(request=s.Decide, responses={200: DECISION, 201: DECISION, **ERRORS})
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.Decide, request)
        principal, version = principal_of(request), version_of(data)
        if data["decision"] == "approve":
            claimed = services.approve(
                principal=principal, suspension_id=pk, version=version, note=data.get("reason", "")
            )
            return created(claimed_body(claimed), claimed.fresh)
        denied = services.deny_approval(principal=principal, suspension_id=pk, version=version, reason=data["reason"])
        body = {
            "decision": "deny",
            "run_id": str(denied.run.id),
            "suspension_id": str(denied.suspension_id),
            "run_state": denied.run.state,
            "run_revision": denied.run.revision,
            "reason": denied.reason,
            "fresh": denied.fresh,
        }
        return created(body, denied.fresh)


# -- admissions and starts --------------------------------------------------------


def admission_row(admission: Admission) -> dict[str, Any]:
    """The receipt plus where the admission is now (the receipt itself never changes)."""
    return {**services.admission_receipt(admission, fresh=False), "state": admission.state}


def admission_rows(page: Any) -> list[dict[str, Any]]:
    return [admission_row(a) for a in page or []]


class RunAdmissions(generics.ListAPIView):
    serializer_class = s.AdmissionReceiptOut
    pagination_class = OldestFirstPagination

    def get_queryset(self) -> QuerySet[Admission]:
        if getattr(self, "swagger_fake_view", False):
            return Admission.objects.none()
        principal = principal_of(self.request)
        if not selectors.runs(principal).filter(pk=self.kwargs["pk"]).exists():
            raise NotFound()
        return selectors.admissions(principal).filter(run_id=self.kwargs["pk"])

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.get_paginated_response(admission_rows(self.paginate_queryset(self.get_queryset())))

    @extend_schema(request=s.Admit, responses=CLAIMED)
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(s.Admit, request)
        version = version_of(data)
        check_run_matches(pk, version)
        claimed = services.admit_reply(
            principal=principal_of(request),
            run_id=pk,
            version=version,
            input=data["input"],
            reply_with=data["reply_with"],
        )
        return created(claimed_body(claimed), claimed.fresh)


class LatestAdmission(APIView):
    @extend_schema(responses={200: s.LatestAdmissionOut, **ERRORS})
    def get(self, request: Request, pk: UUID) -> Response:
        latest, start = selectors.latest_admission(principal_of(request), pk)
        if latest is None:
            raise NotFound()
        body = admission_row(latest)
        body["start"] = services.start_receipt(start) if start else None
        return Response(body)


class AdmissionList(generics.ListAPIView):
    """Admitted work waiting for a start: the engine's queue (DESIGN §13, §16), only where it is an engine.

    A role-only list checks its role like the writes; auditors read a run's
    admissions under /runs/{id}/admissions instead.
    """

    serializer_class = s.AdmissionReceiptOut
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
    @extend_schema(request=None, responses={201: s.ClaimedOut, **ERRORS})
    def post(self, request: Request, pk: UUID) -> Response:
        claimed = services.start_admission(principal=principal_of(request), admission_id=pk)
        return created(claimed_body(claimed), True)
