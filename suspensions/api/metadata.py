"""What `OPTIONS` answers: the view's name, description and media types, without DRF's `actions`.

DRF's SimpleMetadata describes a POST by building the view's serializer; the bodies are pydantic models
(suspensions/wire), so there is no serializer to build, and their one description is the OpenAPI schema
(`GET /api/schema/`).
"""

from typing import TYPE_CHECKING, Any

from rest_framework.metadata import SimpleMetadata
from rest_framework.request import Request

if TYPE_CHECKING:  # rest_framework.views imports this module while it loads its settings
    from rest_framework.views import APIView


class PlainMetadata(SimpleMetadata):
    def determine_metadata(self, request: Request, view: "APIView") -> dict[str, Any]:
        return {
            "name": view.get_view_name(),
            "description": view.get_view_description(),
            "renders": [renderer.media_type for renderer in view.renderer_classes],
            "parses": [parser.media_type for parser in view.parser_classes],
        }
