"""System checks of the app's own settings (`manage.py check --deploy`)."""

from typing import Any

from django.conf import settings
from django.core.checks import Tags, Warning, register


@register(Tags.security, deploy=True)
def data_keys(app_configs: Any, **kwargs: Any) -> list[Warning]:
    """DATA_ENCRYPTION_KEYS set on its own: a key derived from SECRET_KEY ties the webhook secrets to it."""
    if not getattr(settings, "DATA_KEYS_DERIVED", False):
        return []
    return [
        Warning(
            "DATA_ENCRYPTION_KEYS is not set: webhook secrets are sealed under a key derived from SECRET_KEY,"
            " so rotating the secret key would make them unreadable.",
            hint="Set DATA_ENCRYPTION_KEYS to a Fernet key of its own (docs/deploy.md, 'Secrets at rest').",
            id="suspensions.W001",
        )
    ]
