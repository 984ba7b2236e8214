import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import scopes
from ...services import audit


class Command(BaseCommand):
    help = (
        'Recompute every audit chain and every signed checkpoint (docs/auditors.md, "Verify online"). '
        "Prints what was checked; exits 1 naming the first event altered, inserted, deleted or reordered "
        "and every checkpoint that no longer matches or is missing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scope", default=None, help="only the runs of this scope and the scopes below it")
        parser.add_argument("--run", default=None, help="only this run (its id)")

    def handle(self, *args: Any, scope: str | None, run: str | None, **options: Any) -> None:
        if scope is not None and not scopes.is_valid(scope):
            raise CommandError(f"--scope {scope!r} is not a scope path (workspace[/project[/team]])")
        if run is not None:
            try:
                run = str(uuid.UUID(run))
            except ValueError:
                raise CommandError(f"--run {run!r} is not a run id") from None
        report = audit.verify_all(scope=scope, run_id=run)
        self.stdout.write(
            f"checked {report.events} events in {report.runs} runs and {report.checkpoints} checkpoints "
            f"(signatures with public key {audit.public_key()})"
        )
        if report.pruned:
            self.stdout.write(f"{report.pruned} runs verified from a pruned prefix sealed by a signed checkpoint")
        for problem in report.problems:
            self.stderr.write(problem)
        if report.problems:
            raise CommandError(
                f"audit trail NOT intact: {len(report.problems)} problem(s); the first: {report.problems[0]}"
            )
        self.stdout.write("audit trail intact")
