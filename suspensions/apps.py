from django.apps import AppConfig


class SuspensionsConfig(AppConfig):
    name = "suspensions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core.signals import request_finished, request_started

        from . import checks, schemas  # noqa: F401  (checks: registers the deploy checks)
        from .api import schema  # noqa: F401  (registers the OpenAPI auth extension)
        from .observability import tracing

        # Traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/deploy.md, "Traces"): before the web loads its
        # middleware, and before a Celery worker forks its children.
        tracing.setup_from_environment()

        # Schema validation time is bounded per request: one budget for all the calls of a request.
        request_started.connect(schemas.new_request_budget, dispatch_uid="suspensions.schemas.budget")
        request_finished.connect(schemas.end_request_budget, dispatch_uid="suspensions.schemas.budget_end")
