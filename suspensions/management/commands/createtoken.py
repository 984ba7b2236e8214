from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import scopes
from ...models import Role
from ...tokens import create_token


class Command(BaseCommand):
    help = "Create an API token; the secret is printed once, alone on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scope", required=True)
        parser.add_argument("--roles", required=True, help="comma-separated: " + ",".join(Role.values))
        parser.add_argument("--name", default="")

    def handle(self, *args: Any, scope: str, roles: str, name: str, **options: Any) -> None:
        wanted = [r.strip() for r in roles.split(",") if r.strip()]
        unknown = sorted(set(wanted) - set(Role.values))
        if unknown or not wanted:
            raise CommandError(f"unknown roles: {', '.join(unknown) or '(none given)'}")
        if not scopes.is_valid(scope):
            raise CommandError(f"not a valid scope: {scope!r}")
        token, secret = create_token(scope=scope, roles=wanted, name=name or f"{scope}:{'+'.join(wanted)}")
        self.stdout.write(f"token {token.name} ({','.join(wanted)} in {scope}); store it now, it is shown once:")
        self.stdout.write(secret)
