"""One approval, pending or decided, with what was asked (docs/policies.md, "Reading an approval"; read in
approval_reads.py); and a sealed link to its console page (docs/api.md, "`POST /approvals/{id}/link`")."""

from uuid import UUID

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import approval_links
from ..approval_reads import approval_link, find_approval
from ..clock import db_now
from ..wire.answers import ApprovalOut
from ..wire.answers_operators import ApprovalLinkOut
from . import docs
from .authentication import principal_of
from .views import absolute_url


class ApprovalDetail(APIView):
    @extend_schema(**docs.operation("get_approval", ok={200: ApprovalOut}))
    def get(self, request: Request, pk: UUID) -> Response:
        return Response(find_approval(principal_of(request), pk).wire())


class ApprovalLink(APIView):
    """Mints a link and writes nothing: every call a fresh token, each refused once the approval is decided."""

    @extend_schema(**docs.operation("link_approval", ok={200: ApprovalLinkOut}))
    def post(self, request: Request, pk: UUID) -> Response:
        link = approval_link(principal_of(request), pk, db_now())
        path = reverse("console:open_link", args=[approval_links.mint(link)])
        return Response(ApprovalLinkOut.of(link, absolute_url(request, path)).wire())
