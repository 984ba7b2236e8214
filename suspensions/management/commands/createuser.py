"""Create or update a console user: staff, with exactly the given roles in one scope.

Auditors, approvers and operators are people; this is their door without the
Django admin. Run again for the same user and scope, it sets the roles there to
the given ones (memberships in other scopes stay), so it is safe to repeat from
a provisioning script. Everything is checked before anything is written.
"""

import getpass
import secrets
import sys
from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.validators import validate_email
from django.db import transaction

from ... import scopes
from ...models import Membership, MembershipSource, Role


def checked(validate: Callable[..., Any], *args: Any) -> None:
    """A Django validator's refusal as a CommandError, raised before anything is written."""
    try:
        validate(*args)
    except ValidationError as exc:
        raise CommandError(" ".join(exc.messages)) from None


def parse_roles(text: str) -> list[str]:
    wanted = sorted({r.strip() for r in text.split(",") if r.strip()})
    unknown = sorted(set(wanted) - set(Role.values))
    if unknown or not wanted:
        raise CommandError(
            f"unknown roles: {', '.join(unknown) or '(none given)'}; choose from {', '.join(Role.values)}"
        )
    return wanted


class Command(BaseCommand):
    help = (
        "Create a staff user holding roles in a scope, or set an existing user's roles in that scope. "
        "Without --password a new user's password is asked for (or, without a terminal, generated and printed once)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--scope", required=True)
        parser.add_argument("--roles", required=True, help="comma-separated: " + ",".join(Role.values))
        parser.add_argument("--password", default=None, help="sets (or resets) the password")
        parser.add_argument("--email", default=None, help="where approval emails go (docs/notifications.md)")
        parser.add_argument(
            "--noinput", "--no-input", action="store_false", dest="interactive", help="never prompt; generate instead"
        )

    def handle(
        self,
        *args: Any,
        username: str,
        scope: str,
        roles: str,
        password: str | None,
        email: str | None,
        interactive: bool,
        **options: Any,
    ) -> None:
        wanted = parse_roles(roles)
        if not scopes.is_valid(scope):
            raise CommandError(f"not a valid scope: {scope!r}")
        user_model = get_user_model()
        checked(user_model._meta.get_field("username").run_validators, username)
        if email is not None:
            checked(validate_email, email)
        user = user_model.objects.filter(username=username).first()
        generated = None
        if password is None and user is None:
            password, generated = self._new_password(username, interactive)
        if password is not None:
            checked(validate_password, password, user)
        with transaction.atomic():
            user, created = self._save_user(username, password, email)
            self._set_roles(user, scope, wanted)
        verb = "created" if created else "updated"
        self.stdout.write(f"{verb} staff user {username}: {','.join(wanted)} in {scope}")
        if generated is not None:
            self.stdout.write("password (shown once, store it now):")
            self.stdout.write(generated)

    def _new_password(self, username: str, interactive: bool) -> tuple[str, str | None]:
        """A typed password, or a generated one to print when nobody is at a terminal."""
        if interactive and sys.stdin.isatty():
            first = getpass.getpass(f"Password for {username}: ")
            if first != getpass.getpass("Password (again): "):
                raise CommandError("the passwords differ; nothing was written")
            return first, None
        made = secrets.token_urlsafe(18)
        return made, made

    def _save_user(self, username: str, password: str | None, email: str | None) -> tuple[Any, bool]:
        user, created = get_user_model().objects.get_or_create(username=username, defaults={"is_staff": True})
        # Staff status is the console's door (docs/decisions.md, "Trust boundaries"): an existing user gets it back too.
        user.is_staff = True
        if password is not None:
            user.set_password(password)
        if email is not None:
            user.email = email
        user.save()
        return user, created

    def _set_roles(self, user: Any, scope: str, wanted: list[str]) -> None:
        # Hand-granted roles only: those a provider group gives are services.role_mappings' to change.
        held = Membership.objects.filter(user=user, scope=scope, source=MembershipSource.HAND)
        held.exclude(role__in=wanted).delete()
        have = set(held.values_list("role", flat=True))
        for role in wanted:
            if role not in have:
                membership = Membership(user=user, role=role)
                membership.stamp_scope(scope)
                membership.save()
