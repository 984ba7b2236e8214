"""`Idempotency-Key` on the POSTs that create (docs/api.md, "4. Claims and recovery"): `@idempotent` on the view's
`post`.

Without the header a request is served as before, at no cost: not one
statement more. With it, the view runs inside one transaction that first
takes the key (services/idempotency.take), so that:

- the same key with the same request (method, path and body compared as
  JSON values) within 24 hours answers the first answer again, its status
  and body, with `Idempotent-Replayed: true`; nothing is done twice;
- the same key with another request is `409 idempotency_mismatch`;
- a refusal (any answer that is not 2xx, or any exception) rolls the key
  back with everything else: the corrected request may reuse it;
- two requests with one key at once: the second waits for the first to
  end, then replays its answer;
- a replay first passes through the view's `replay` check, when it has one:
  `unless_deleted(Model)` answers `410 deleted_since` once what the first
  answer names is gone, and a webhook's replay withholds a secret that no
  longer signs (api/webhooks.py);
- a new key past the principal's allowance is `429 throttled`.

A bad key (not 1 to 255 printable ASCII characters) is `400
invalid_request` before anything is read or written. The decorator wraps
the view's handler, inside DRF's dispatch: authentication, throttling and
the exception handler are DRF's own.
"""

import functools
import json
import re
from collections.abc import Callable
from typing import Any

from django.db import models, transaction
from django.http import QueryDict
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from .. import digests
from ..exceptions import DeletedSince, InvalidRequest
from ..services import idempotency
from .authentication import principal_of

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
# The header as the schema shows it on every keyed operation; api/schema.py adds the 409 and the replay header.
PARAMETER = OpenApiParameter(
    HEADER,
    str,
    OpenApiParameter.HEADER,
    description="1 to 255 printable ASCII characters, e.g. a UUID. The same key with the same request within "
    "24 hours answers the first answer again (`Idempotent-Replayed: true`); with another request, "
    "`409 idempotency_mismatch`. A refused request keeps no key.",
)
# Printable ASCII, space included (RFC 9110 strips it at either end of a field value).
VALID_KEY = re.compile(r"[\x20-\x7e]{1,255}\Z")

Handler = Callable[..., Response]
# What a replay answers, given the first answer's status and body: the body again, changed, or a refusal.
Replay = Callable[[int, dict[str, Any]], dict[str, Any]]


def unless_deleted(model: type[models.Model]) -> Replay:
    """A replay check for a keyed request on a row that can be deleted: `410 deleted_since` once it is gone.

    An engine that lost the first answer learns that its request did succeed
    (`first_status`), what it made or changed (`id`), and that someone removed
    it since; the key stays taken, so the retry never makes it again.
    """

    def replay(status: int, body: dict[str, Any]) -> dict[str, Any]:
        if model._default_manager.filter(pk=body["id"]).exists():
            return body
        raise DeletedSince(
            f"this Idempotency-Key's request answered {status} for {model._meta.verbose_name} {body['id']}, "
            "which has since been deleted; use a new key to make another",
            id=body["id"],
            first_status=status,
        )

    return replay


def idempotent(handler: Handler | None = None, *, replay: Replay | None = None) -> Any:
    """Make a view's POST handler answer a repeated `Idempotency-Key` with its first answer.

    `@idempotent`, or `@idempotent(replay=...)` to check a replay against what
    happened since (unless_deleted; a webhook's secret).
    """
    if handler is None:
        return functools.partial(idempotent, replay=replay)

    @functools.wraps(handler)
    def answer(view: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = request.META.get("HTTP_IDEMPOTENCY_KEY")
        if key is None:
            return handler(view, request, *args, **kwargs)
        if not VALID_KEY.match(key):
            raise InvalidRequest(
                "The Idempotency-Key header is not valid.",
                errors={HEADER: ["Must be 1 to 255 printable ASCII characters."]},
            )
        principal = principal_of(request)
        method_path = f"{request.method} {request.path}"
        digest = request_digest(request, method_path)
        with transaction.atomic():
            first = idempotency.take(principal=principal, key=key, request_digest=digest, method_path=method_path)
            if first is not None:
                body = json.loads(first.body)
                if replay is not None:
                    body = replay(first.status, body)
                return Response(body, status=first.status, headers={REPLAYED: "true"})
            response = handler(view, request, *args, **kwargs)
            if not 200 <= response.status_code < 300:
                transaction.set_rollback(True)  # a refusal keeps no key (nor anything else)
                return response
            body = JSONRenderer().render(response.data).decode("utf-8")
            idempotency.keep(principal=principal, key=key, status=response.status_code, body=body)
        return response

    return extend_schema(parameters=[PARAMETER])(answer)  # type: ignore[no-any-return]


def request_digest(request: Request, method_path: str) -> str:
    """SHA-256 of the canonical JSON of the method, the path and the parsed body: key order and spacing do not count."""
    body = request.data  # parsed strictly; a malformed body is a 400 here, before anything is written
    if isinstance(body, QueryDict):  # no body at all: the same as `{}`
        body = body.dict()
    try:
        return digests.digest({"request": method_path, "body": body})
    except ValueError:
        raise InvalidRequest("The body holds text that has no UTF-8 form.") from None
