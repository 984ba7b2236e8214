from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ...services import retention


class Command(BaseCommand):
    help = (
        "Create the events table's partitions ahead, then prune the months older than AUDIT_RETENTION_DAYS "
        'after a signed checkpoint seals what goes (docs/auditors.md, "Retention and legal holds"). '
        "The beat does the same every hour."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        made = retention.ensure_partitions()
        self.stdout.write(f"partitions created: {', '.join(made) or 'none'}")
        if not settings.AUDIT_RETENTION_DAYS:
            raise CommandError("AUDIT_RETENTION_DAYS is not set: retention is off, nothing is pruned")
        record = retention.prune()
        if record is None:
            self.stdout.write("nothing to prune: no month is wholly older than the retention")
            return
        seals = ", ".join(f"checkpoint {seq} of {w}" for w, seq in record.checkpoints) or "none"
        self.stdout.write(
            f"pruned {record.events} events of {record.runs} runs before {record.before.isoformat()} "
            f"({', '.join(record.partitions)}); {record.held_runs} runs kept theirs; sealed by {seals}"
        )
