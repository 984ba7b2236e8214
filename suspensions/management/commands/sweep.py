"""Run the expiry sweep (T9) once from the shell, batch after batch until the backlog is empty."""

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ... import services
from ...services.sweep import BatchResult, SweepResult

PROGRESS_EVERY_SECONDS = 1.0


class Command(BaseCommand):
    help = "Expire every pause past its deadline now (what the beat task does every SWEEP_INTERVAL_SECONDS)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch-size", type=int, default=None, help="Rows per transaction (SWEEP_BATCH_SIZE).")

    def handle(self, *args: Any, batch_size: int | None, **options: Any) -> None:
        if batch_size is not None and batch_size < 1:
            self.stderr.write("--batch-size must be at least 1")
            raise SystemExit(2)
        began = time.monotonic()
        last = began

        def progress(batch: BatchResult, total: SweepResult) -> None:
            nonlocal last
            now = time.monotonic()
            if options["verbosity"] > 1 or now - last >= PROGRESS_EVERY_SECONDS:
                last = now
                self.stdout.write(self._line(total, now - began))

        total = services.expire_suspensions(batch_size=batch_size, on_batch=progress)
        self.stdout.write(self.style.SUCCESS("done: " + self._line(total, time.monotonic() - began)))

    @staticmethod
    def _line(total: SweepResult, seconds: float) -> str:
        rate = total.expired / seconds if seconds > 0 else 0.0
        return (
            f"{total.expired:,} expired ({total.receipts:,} with a receipt), {total.dropped:,} dropped from "
            f"finished runs, {total.failed:,} failed, {total.batches:,} batches, {rate:,.0f} rows/s"
        )
