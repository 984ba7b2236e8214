"""The SCIM endpoints (docs/identity.md, "Provisioning (SCIM) and leavers"): django-scim2's views, made strict.

What is changed from the library: a body is parsed strictly and must be an
object; a filter that the database cannot run is a 400 `invalidFilter`, not a
500; a page holds at most MAX_COUNT resources; and lists read the person with
the SCIM id in one query.
"""

from typing import Any

from django.db import DatabaseError, transaction
from django.http import HttpRequest
from django_scim import views
from django_scim.exceptions import BadRequestError
from scim2_filter_parser.parser import SCIMParserError

from .. import strictjson

MAX_COUNT = 200


class Strict:
    """Shared by the Users and Groups views."""

    def load_body(self, body: bytes) -> dict[str, Any]:
        try:
            parsed = strictjson.loads(body.decode("utf-8").strip() or "{}")
        except (UnicodeDecodeError, ValueError) as error:
            raise BadRequestError(f"the body is not JSON: {error}", scim_type="invalidSyntax") from None
        if not isinstance(parsed, dict):
            raise BadRequestError("the body must be a JSON object", scim_type="invalidSyntax")
        return parsed

    def _page(self, request: HttpRequest) -> tuple[int, int]:
        start, count = views.FilterMixin._page(self, request)  # type: ignore[arg-type]
        if count < 0:
            raise BadRequestError("Invalid count (must be >= 0)", scim_type="invalidValue")
        return start, min(count, MAX_COUNT)

    def _search(self, request: HttpRequest, query: str, start: int, count: int) -> Any:
        try:
            with transaction.atomic():  # a savepoint: a failed statement leaves the connection usable
                found = list(self.__class__.parser_getter().search(query, request))  # type: ignore[attr-defined]
        except DatabaseError:
            raise BadRequestError("Invalid filter: not comparable", scim_type="invalidFilter") from None
        # What scim2-filter-parser raises for a filter it cannot read.
        except (SCIMParserError, ValueError, TypeError, KeyError, IndexError, AttributeError, NotImplementedError) as e:
            raise BadRequestError(f"Invalid filter: {e}"[:300], scim_type="invalidFilter") from None
        return self._build_response(request, found, start, count)  # type: ignore[attr-defined]


class UsersView(Strict, views.UsersView):
    pass


class GroupsView(Strict, views.GroupsView):
    pass


class UserSearchView(Strict, views.UserSearchView):
    pass


class GroupSearchView(Strict, views.GroupSearchView):
    pass
