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
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ..exceptions import InvalidRequest, ServiceError, Unavailable
from ..principals import Principal
from ..wire import requests
from ..wire.answers import DecisionResultOut, DecisionsOut
from . import docs, views
from .authentication import principal_of
from .errors import as_service_error, problem_body


def paths(errors: Any, prefix: str = "") -> dict[str, list[str]]:
    """The body's nested `errors` (wire.field_errors) as {path: messages}, each path as a client writes it:
    `items[3].version.run_id`."""
    if isinstance(errors, dict):
        found: dict[str, list[str]] = {}
        for key, value in errors.items():
            if str(key).isdigit():
                where = f"{prefix}[{key}]"
            elif key == "non_field_errors":
                where = prefix or key
            else:
                where = f"{prefix}.{key}" if prefix else str(key)
            found |= paths(value, where)
        return found
    return {prefix: [str(e) for e in errors]} if isinstance(errors, list) else {prefix: [str(errors)]}


def refused(errors: dict[str, list[str]]) -> InvalidRequest:
    first = next(iter(errors))
    return InvalidRequest(f"{first}: {' '.join(errors[first])} Nothing was decided.", errors=errors)


def items_of(body: Any) -> list[requests.DecideItem]:
    """The list's items, every one checked before the first claim; a fault anywhere is one 400 naming its path."""
    try:
        items = views.parsed_data(requests.DecideMany, body).items
    except InvalidRequest as exc:
        raise refused(paths(exc.extra.get("errors", {}))) from None
    errors: dict[str, list[str]] = {}
    seen: dict[uuid.UUID, int] = {}
    for i, item in enumerate(items):
        if item.approval_id in seen:
            errors[f"items[{i}].approval_id"] = [
                f"The same approval as items[{seen[item.approval_id]}]: decide it once."
            ]
        seen.setdefault(item.approval_id, i)
        # The single decide refuses this too (400, before any write): here it would decide the rest.
        if item.version.suspension_id != item.approval_id:
            errors[f"items[{i}].version.suspension_id"] = ["Must be the item's approval_id."]
    if errors:
        raise refused(errors)
    return items


def decided(principal: Principal, item: requests.DecideItem) -> DecisionResultOut:
    """One item, as its single decide answers it: its status and body, a refusal as its problem."""
    approval_id = item.approval_id
    try:
        status, body = views.decide(principal, approval_id, item)
    except (ServiceError, DatabaseError) as exc:
        error = as_service_error(exc) or Unavailable()
        status, body = error.status, problem_body(error)
    return DecisionResultOut(approval_id=approval_id, status=status, body=body)


class DecideMany(APIView):
    @extend_schema(
        **docs.operation(
            "decide_approvals",
            request=requests.DecideMany,
            ok={200: OpenApiResponse(DecisionsOut, description="Each item's answer, in the items' order.")},
        )
    )
    def post(self, request: Request) -> Response:
        items = items_of(request.data)
        principal = principal_of(request)
        return Response(DecisionsOut(results=[decided(principal, item) for item in items]).wire())
