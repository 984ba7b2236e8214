"""Seal every webhook secret (and kept Idempotency-Key answer) again under the first DATA_ENCRYPTION_KEYS key."""

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from ...models import IdempotencyKey, WebhookEndpoint


class Command(BaseCommand):
    help = (
        "Re-seal webhook secrets under the first DATA_ENCRYPTION_KEYS key. Rotation: put a new key first, "
        "restart, run this, then remove the old key (docs/deploy.md, Secrets at rest)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        done = 0
        for pk in WebhookEndpoint.objects.values_list("pk", flat=True).order_by("pk"):
            # One row at a time, locked: a secret rotated meanwhile is read after its rotation, never overwritten.
            with transaction.atomic():
                endpoint = WebhookEndpoint.objects.select_for_update().only("secret", "previous_secret").get(pk=pk)
                # Read open (any key), saved sealed under the first key.
                endpoint.save(update_fields=["secret", "previous_secret"])
            done += 1
        self.stdout.write(f"{done} webhook endpoint(s) sealed under the first key.")
        # A keyed create's kept answer may hold a secret too (services/idempotency.py); each is written once.
        kept = 0
        for key in IdempotencyKey.objects.exclude(body="").only("body").iterator():
            key.save(update_fields=["body"])
            kept += 1
        self.stdout.write(f"{kept} kept Idempotency-Key answer(s) sealed under the first key.")
