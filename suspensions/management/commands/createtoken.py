import re
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from ... import scopes
from ...models import Role
from ...tokens import create_token

UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def lifetime(text: str) -> timedelta:
    """'30d', '12h', '90m' or '45s': a positive whole number and one unit."""
    found = re.fullmatch(r"([0-9]+)([smhd])", text.strip())
    if found is None or int(found[1]) == 0:
        raise CommandError(f"--expires-in must be a positive whole number and s, m, h or d (e.g. 30d), not {text!r}")
    return timedelta(**{UNITS[found[2]]: int(found[1])})


class Command(BaseCommand):
    help = "Create an API token; the secret is printed once, alone on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scope", required=True)
        parser.add_argument("--roles", required=True, help="comma-separated: " + ",".join(Role.values))
        parser.add_argument("--name", default="")
        parser.add_argument("--expires-in", default=None, help="e.g. 30d, 12h, 90m, 45s; without it, never")
        parser.add_argument(
            "--user", default=None, help="the username this token acts for (one person for separation of duties)"
        )

    def handle(
        self, *args: Any, scope: str, roles: str, name: str, expires_in: str | None, user: str | None, **options: Any
    ) -> None:
        wanted = [r.strip() for r in roles.split(",") if r.strip()]
        unknown = sorted(set(wanted) - set(Role.values))
        if unknown or not wanted:
            raise CommandError(f"unknown roles: {', '.join(unknown) or '(none given)'}")
        if not scopes.is_valid(scope):
            raise CommandError(f"not a valid scope: {scope!r}")
        expires_at = timezone.now() + lifetime(expires_in) if expires_in is not None else None
        person = None
        if user is not None:
            person = get_user_model().objects.filter(username=user).first()
            if person is None:
                raise CommandError(f"no user named {user!r}")
        token, secret = create_token(
            scope=scope, roles=wanted, name=name or f"{scope}:{'+'.join(wanted)}", expires_at=expires_at, user=person
        )
        until = f"expires {expires_at.isoformat(timespec='seconds')}" if expires_at else "never expires"
        self.stdout.write(
            f"token {token.name} ({','.join(wanted)} in {scope}, {until}); store it now, it is shown once:"
        )
        self.stdout.write(secret)
