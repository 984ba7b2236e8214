"""The bench's own WSGI application: the project, plus two reference endpoints that exist only here.

gunicorn serves it as `bench.floor_app:application` (bench/cpu.py starts it);
the project's URLconf and WSGI module never name it, so a deployed service
has no such route. Both endpoints answer `GET /api/v1/bench/<name>/<run id>`
through the project's whole middleware stack and DRF, and read one run by
its primary key (the one indexed SELECT):

- `floor`: DRF APIView + a bearer token checked with one raw indexed SELECT
  of its hash + that one SELECT. What any token-authenticated DRF request
  on this stack costs: the reference of docs/performance.md.
- `auth`: the same view with the project's own authentication and throttle
  classes instead (REST_FRAMEWORK defaults): `auth - floor` is what the
  project's token check costs beyond the minimal one.
"""

import os
from typing import Any

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "suspensions_project.settings")
application = get_wsgi_application()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.urls import include, path  # noqa: E402
from rest_framework import authentication, exceptions  # noqa: E402
from rest_framework.request import Request  # noqa: E402
from rest_framework.response import Response  # noqa: E402
from rest_framework.views import APIView  # noqa: E402

from suspensions.principals import Principal  # noqa: E402
from suspensions.tokens import hash_token  # noqa: E402

TOKEN_SQL = (
    "SELECT id, name, scope, roles FROM suspensions_apitoken"
    " WHERE token_hash = %s AND NOT revoked AND (expires_at IS NULL OR expires_at > now())"
)
RUN_SQL = "SELECT id, state, revision FROM suspensions_run WHERE id = %s"


class MinimalBearer(authentication.BaseAuthentication):
    """A bearer token, one indexed SELECT of its hash, nothing else."""

    def authenticate(self, request: Request) -> tuple[Principal, None] | None:
        header = authentication.get_authorization_header(request).split()
        if len(header) != 2 or header[0].lower() != b"bearer":
            raise exceptions.AuthenticationFailed()
        with connection.cursor() as cursor:
            cursor.execute(TOKEN_SQL, [hash_token(header[1].decode("ascii"))])
            row = cursor.fetchone()
        if row is None:
            raise exceptions.AuthenticationFailed()
        return Principal(name=f"token:{row[1]}", grants=((row[2], frozenset(row[3].split(","))),)), None

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"


class Floor(APIView):
    authentication_classes = [MinimalBearer]
    throttle_classes: list[Any] = []

    def get(self, request: Request, pk: Any) -> Response:
        with connection.cursor() as cursor:
            cursor.execute(RUN_SQL, [pk])
            row = cursor.fetchone()
        if row is None:
            raise exceptions.NotFound()
        return Response({"id": str(row[0]), "state": row[1], "revision": row[2]})


class Auth(Floor):
    """The floor with the project's authentication and throttle classes."""

    authentication_classes = Floor.settings.DEFAULT_AUTHENTICATION_CLASSES  # type: ignore[assignment]
    throttle_classes = Floor.settings.DEFAULT_THROTTLE_CLASSES


handler404 = "suspensions.api.errors.not_found"
handler500 = "suspensions.api.errors.server_error"
urlpatterns = [
    path("api/v1/bench/floor/<uuid:pk>", Floor.as_view(), name="bench-floor"),
    path("api/v1/bench/auth/<uuid:pk>", Auth.as_view(), name="bench-auth"),
    path("", include(settings.ROOT_URLCONF)),
]
settings.ROOT_URLCONF = __name__
