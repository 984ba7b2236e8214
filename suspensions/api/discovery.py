"""Agent-reply discovery (docs/api.md, "`GET /agent-replies/runs` — discovery"): which runs the bus must answer or
recover."""

from uuid import UUID

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import selectors
from ..exceptions import Forbidden
from ..models import Role
from ..principals import Principal
from ..wire.answers import DiscoveryOut
from . import docs
from .authentication import principal_of

MAX_LIMIT = 256
DEFAULT_LIMIT = 100


class DiscoveryQuery(serializers.Serializer):
    # A limit outside 1..256 is refused, never clamped: a bus that asked for
    # 1000 must learn that it will not get them.
    after = serializers.UUIDField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT, default=DEFAULT_LIMIT)


class AgentReplyRuns(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("after", str, description="Run id cursor (exclusive)."),
            OpenApiParameter("limit", int, description=f"1..{MAX_LIMIT}, default {DEFAULT_LIMIT}."),
        ],
        **docs.operation("list_agent_reply_runs", ok={200: DiscoveryOut}),
    )
    def get(self, request: Request) -> Response:
        principal = principal_of(request)
        if not principal.superuser and not principal.scopes_with(Role.BUS):
            raise Forbidden("the 'bus' role is required")
        query = DiscoveryQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(page(principal, **query.validated_data).wire())


def page(principal: Principal, *, limit: int, after: UUID | None = None) -> DiscoveryOut:
    runs = selectors.agent_reply_runs(principal)
    if after is not None:
        runs = runs.filter(id__gt=after)
    # One row past the page tells whether another page exists.
    ids = list(runs.values_list("id", flat=True)[: limit + 1])
    more = len(ids) > limit
    ids = ids[:limit]
    return DiscoveryOut(runs=ids, next=ids[-1] if more else None)
