from django.apps import AppConfig


class SuspensionsConfig(AppConfig):
    name = "suspensions"
    default_auto_field = "django.db.models.BigAutoField"
