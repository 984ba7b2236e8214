"""A list of decisions in one request (docs/api.md, "`POST /approvals/decide`: a list of decisions").

Each item is a single decide's body plus its `approval_id`, and is decided
exactly as `POST /approvals/{approval_id}/decide` would decide it: the same
view function (views.decide), the same service, its own claim in its own
transaction. So an item's `status` and `body` are the single decide's
answer, a refusal included (its problem+json body), and a retry of the list
replays each item as a single decide replays (the same approver's identical
decision again: 200, `fresh: false`).

The list itself is checked whole before the first claim: a malformed list
is one 400 naming the path of each fault (`items[3].decision`) and decides
nothing. No `Idempotency-Key`: it would hold the whole list in one
transaction, and each decision already replays on its own.
"""

import uuid
from typing import Any

from django.db import DatabaseError
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ..exceptions import InvalidRequest, ServiceError, Unavailable
from ..principals import Principal
from . import bodies, docs, views
from . import serializers as s
from .authentication import principal_of
from .errors import as_service_error, problem_body

Item = tuple[uuid.UUID, dict[str, Any]]


class DecisionResultOut(serializers.Serializer):
    approval_id = serializers.UUIDField()
    status = serializers.IntegerField(help_text="What `POST /approvals/{approval_id}/decide` would have answered.")
    body = serializers.JSONField(
        help_text="That answer's body: a decision (as the single decide's 200, 201 or 202) or a problem."
    )


class DecisionsOut(serializers.Serializer):
    results = DecisionResultOut(many=True, help_text="One result per item, in the items' order.")


def plain_items(body: Any) -> list[Item] | None:
    """Every item through the single decide's flat check (api.bodies), or None: then the serializer decides."""
    if type(body) is not dict or set(body) != {"items"}:
        return None
    items = body["items"]
    if type(items) is not list or not 1 <= len(items) <= s.MAX_DECISIONS:
        return None
    out: list[Item] = []
    for item in items:
        if type(item) is not dict or type(item.get("approval_id")) is not str:
            return None
        try:
            approval_id = uuid.UUID(item["approval_id"])
        except ValueError:
            return None
        data = bodies.plainly(bodies.decide, {k: v for k, v in item.items() if k != "approval_id"})
        if data is None:
            return None
        out.append((approval_id, data))
    return out


def paths(errors: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested errors as {path: messages}, the path as a client writes it: `items[3].version.run_id`."""
    if isinstance(errors, dict):
        found: dict[str, list[str]] = {}
        for key, value in errors.items():
            if isinstance(key, int):
                where = f"{prefix}[{key}]"
            elif key == "non_field_errors":
                where = prefix or key
            else:
                where = f"{prefix}.{key}" if prefix else str(key)
            found |= paths(value, where)
        return found
    if isinstance(errors, list) and any(isinstance(e, (dict, list)) for e in errors):
        return {k: v for i, e in enumerate(errors) for k, v in paths(e, f"{prefix}[{i}]").items()}
    return {prefix: [str(e) for e in errors]} if isinstance(errors, list) else {prefix: [str(errors)]}


def refused(errors: dict[str, list[str]]) -> InvalidRequest:
    first = next(iter(errors))
    return InvalidRequest(f"{first}: {' '.join(errors[first])} Nothing was decided.", errors=errors)


def items_of(body: Any) -> list[Item]:
    """The list's items, every one checked before the first claim; a fault anywhere is one 400 naming its path."""
    items = plain_items(body)
    if items is None:
        serializer = s.DecideMany(data=body)
        if not serializer.is_valid():
            raise refused(paths(serializer.errors))
        valid = serializer.validated_data["items"]
        items = [(d["approval_id"], {k: v for k, v in d.items() if k != "approval_id"}) for d in valid]
    errors: dict[str, list[str]] = {}
    seen: dict[uuid.UUID, int] = {}
    for i, (approval_id, data) in enumerate(items):
        if approval_id in seen:
            errors[f"items[{i}].approval_id"] = [f"The same approval as items[{seen[approval_id]}]: decide it once."]
        seen.setdefault(approval_id, i)
        # The single decide refuses this too (400, before any write): here it would decide the rest.
        if str(data["version"]["suspension_id"]) != str(approval_id):
            errors[f"items[{i}].version.suspension_id"] = ["Must be the item's approval_id."]
    if errors:
        raise refused(errors)
    return items


def decided(principal: Principal, approval_id: uuid.UUID, data: dict[str, Any]) -> dict[str, Any]:
    """One item, as its single decide answers it: its status and body, a refusal as its problem."""
    try:
        status, body = views.decide(principal, approval_id, data)
    except (ServiceError, DatabaseError) as exc:
        error = as_service_error(exc) or Unavailable()
        status, body = error.status, problem_body(error)
    return {"approval_id": str(approval_id), "status": status, "body": body}


class DecideMany(APIView):
    @extend_schema(
        **docs.operation(
            "decide_approvals",
            request=s.DecideMany,
            ok={200: OpenApiResponse(DecisionsOut, description="Each item's answer, in the items' order.")},
        )
    )
    def post(self, request: Request) -> Response:
        items = items_of(request.data)
        principal = principal_of(request)
        return Response({"results": [decided(principal, pk, data) for pk, data in items]})
