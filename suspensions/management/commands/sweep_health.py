from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ...observability.heartbeat import MISSED_SWEEPS, status


class Command(BaseCommand):
    help = (
        "The sweep worker's health check (docs/deploy.md, \"The sweep's worker\"): exits 0 while the last "
        f"successful expiry sweep is at most {MISSED_SWEEPS} sweep intervals old, 1 when it is older, when no "
        "sweep ever succeeded, or when the database cannot be read. Reads the heartbeat only: no broker, no "
        "`celery inspect`. For a container's HEALTHCHECK or a systemd timer."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        found, fresh = status()
        allowed = MISSED_SWEEPS * settings.SWEEP_INTERVAL_SECONDS
        if not fresh:
            raise CommandError(f"sweep unhealthy: {found} (allowed: {allowed} s)")
        self.stdout.write(f"sweep ok: last success within {allowed} s")
