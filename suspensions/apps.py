from django.apps import AppConfig


class SuspensionsConfig(AppConfig):
    name = "suspensions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from .api import schema  # noqa: F401  (registers the OpenAPI auth extension)
