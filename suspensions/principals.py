"""Who is calling: an API token or a staff user, reduced to (scope, roles) grants."""

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q

from . import scopes


@dataclass(frozen=True)
class Principal:
    name: str
    grants: tuple[tuple[str, frozenset[str]], ...] = ()
    superuser: bool = False
    token_id: str | None = field(default=None, compare=False)
    # The person behind the principal: the user, or the user a token is linked to.
    user_id: int | None = field(default=None, compare=False)
    # A delegate deciding for someone (docs/identity.md, "Delegation"): the person represented, by principal name
    # (`user:<username>`) and user id. `name` and `user_id` stay the delegate's, who is the actor on every record.
    acting_for: str | None = field(default=None, compare=False)
    for_user_id: int | None = field(default=None, compare=False)

    # DRF's IsAuthenticated reads these.
    is_authenticated: bool = True
    is_active: bool = True

    def can(self, role: str, scope: str) -> bool:
        """True when the principal holds `role` in a scope covering `scope`."""
        if self.superuser:
            return True
        return any(role in roles and scopes.covers(held, scope) for held, roles in self.grants)

    def sees(self, scope: str) -> bool:
        return self.superuser or any(scopes.covers(held, scope) for held, _ in self.grants)

    def scopes_with(self, *roles: str) -> list[str]:
        """Scopes where the principal holds any of `roles` (any role at all when none is named)."""
        return [held for held, granted in self.grants if not roles or granted & set(roles)]

    @property
    def person(self) -> str:
        """Who this is for distinct votes: the person represented when acting for one, the user when known, else the
        name. A person and their delegate acting for them are one voter."""
        if self.for_user_id is not None:
            return f"user#{self.for_user_id}"
        return f"user#{self.user_id}" if self.user_id is not None else self.name

    def scope_q(self, *roles: str, prefix: str = "") -> Q:
        """A filter on the scope prefix columns: the rows this principal may see.

        With no grants it matches nothing (pk__in=[]), never everything.
        """
        if self.superuser:
            return Q()
        q = Q(pk__in=[])
        for held in self.scopes_with(*roles):
            q |= Q(**{f"{prefix}scope_l{scopes.depth(held)}": held})
        return q


# The people's roles: a token linked to a user holds them only while that user has staff status,
# as the console does (docs/decisions.md, "Trust boundaries"). Engine and bus are machines' roles and need no one's
# staff flag.
STAFF_ROLES = frozenset({"approver", "auditor", "operator"})


def for_token(token: Any) -> Principal:
    """A token's principal: an ApiToken, or the tokens.LiveToken authentication reads (the same columns).

    A token linked to a user who lost staff status keeps only its machine roles
    (an inactive user's tokens are not live at all: tokens.live_token).
    """
    roles = frozenset(r for r in token.roles.split(",") if r)
    if token.user_id is not None and not _user_is_staff(token):
        roles -= STAFF_ROLES
    return Principal(
        name=f"token:{token.name}",
        grants=((token.scope, roles),),
        token_id=str(token.id),
        user_id=token.user_id,
    )


def _user_is_staff(token: Any) -> bool:
    staff = getattr(token, "user_staff", None)  # a LiveToken read it with the token
    if staff is None:
        staff = bool(token.user.is_staff and token.user.is_active)
    return bool(staff)


def has_staff_access(user: Any) -> bool:
    """The console and the session API open only to an active staff user (docs/decisions.md, "Trust boundaries").

    Superusers need the staff flag too: clearing it (or is_active) is the one
    switch that removes every power at once.
    """
    return bool(getattr(user, "is_authenticated", False) and user.is_active and user.is_staff)


def for_user(user: Any) -> Principal:
    """A user's memberships as grants; none at all for a user without staff access, whatever they hold."""
    from .models import Membership

    name = f"user:{user.get_username()}"
    if not has_staff_access(user):
        return Principal(name=name, user_id=user.pk)
    grants: dict[str, set[str]] = {}
    for scope, role in Membership.objects.filter(user=user).values_list("scope", "role"):
        grants.setdefault(scope, set()).add(role)
    return Principal(
        name=name,
        grants=tuple((s, frozenset(r)) for s, r in sorted(grants.items())),
        superuser=bool(getattr(user, "is_superuser", False)),
        user_id=user.pk,
    )


def principal_of(request: Any) -> Principal:
    """The principal behind a request: a token's, or a logged-in staff user's memberships."""
    user = request.user
    if isinstance(user, Principal):
        return user
    if user is None or not user.is_authenticated:
        return Principal(name="anonymous", is_authenticated=False)
    cached = getattr(request, "_suspensions_principal", None)
    if cached is None:
        cached = for_user(user)
        request._suspensions_principal = cached
    return cached
