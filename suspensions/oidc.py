"""Single sign-on by OpenID Connect (docs/identity.md): mozilla-django-oidc's flow, the provider found by discovery.

mozilla-django-oidc runs the authorization code flow with PKCE, state and
nonce, and checks the id_token's signature against the provider's JWKS. Here:

- discovery: the endpoints come from `<OIDC_ISSUER>/.well-known/openid-configuration`
  (read once per process and issuer), never from settings;
- the id_token is also checked for its issuer, audience (and `azp`), expiry
  and subject, each refusal a SuspiciousOperation the callback turns into a
  clear 400 page (console/oidc.py); nothing is written before every check passed;
- a person is keyed by (issuer, sub) (OidcIdentity); an existing account is
  linked by email only when the provider says `email_verified` and exactly
  one account has that address; otherwise a new staff account is made;
- at each sign-in, and each re-check, the groups claim rewrites the person's
  provider-given roles (services.role_mappings.sync_roles);
- RecheckMiddleware re-checks a signed-in person at the provider at most every
  OIDC_RENEW_SECONDS (a refresh-token grant, else the userinfo endpoint with the
  access token); a refusal, or a provider that cannot be reached, ends the session.
"""

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib import auth
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from .models import OidcIdentity
from .services.role_mappings import sync_roles

log = logging.getLogger("suspensions.identity")

# Session keys: who the provider said the person is, when they were last checked, and the tokens to check them with.
SUBJECT = "oidc_sub"
CHECKED_AT = "oidc_checked_at"
REFRESH_TOKEN = "oidc_refresh_token"
ACCESS_TOKEN = "oidc_access_token"
LEEWAY_SECONDS = 30  # clock skew allowed between the provider and this service
REQUIRED_CLAIMS = ["exp", "iat", "iss", "aud", "sub"]


def enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


@functools.lru_cache(maxsize=8)
def _discover(issuer: str) -> dict[str, Any]:
    response = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=settings.OIDC_TIMEOUT)
    response.raise_for_status()
    config = response.json()
    # OpenID Connect Discovery 1.0, section 4.3: the document must name the issuer it was read from.
    if config.get("issuer", "").rstrip("/") != issuer:
        raise SuspiciousOperation(f"the discovery document names issuer {config.get('issuer')!r}, not {issuer!r}")
    return dict(config)


def discovery() -> dict[str, Any]:
    """The provider's discovery document (cached per process; a failure is not cached, the next sign-in retries)."""
    return _discover(settings.OIDC_ISSUER)


class ProviderBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend, with discovered endpoints, stricter id_token checks and people keyed by sub."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Not the parent's __init__: it reads endpoints from settings, and Django builds a backend per request
        # (get_user), where no network call belongs. The endpoints are read from discovery when first needed.
        self.UserModel = get_user_model()
        self.OIDC_RP_CLIENT_ID = settings.OIDC_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        self.token_info: dict[str, Any] = {}

    @property
    def OIDC_OP_TOKEN_ENDPOINT(self) -> str:  # noqa: N802 - the parent's name
        return str(discovery()["token_endpoint"])

    @property
    def OIDC_OP_USER_ENDPOINT(self) -> str | None:  # noqa: N802
        return discovery().get("userinfo_endpoint")

    @property
    def OIDC_OP_JWKS_ENDPOINT(self) -> str:  # noqa: N802
        return str(discovery()["jwks_uri"])

    def _verify_jws(self, payload: Any, key: Any) -> dict[str, Any]:
        """The signature (the parent's check) and what the parent leaves out: issuer, audience, expiry, subject."""
        try:
            algorithm = jwt.get_unverified_header(payload).get("alg")
            if algorithm != self.OIDC_RP_SIGN_ALGO:
                raise SuspiciousOperation(f"the id_token is signed with {algorithm!r}, not {self.OIDC_RP_SIGN_ALGO!r}")
            claims = jwt.decode(
                payload,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=settings.OIDC_ISSUER,
                leeway=LEEWAY_SECONDS,
                options={"require": REQUIRED_CLAIMS},
            )
        except jwt.InvalidTokenError as exc:
            raise SuspiciousOperation(f"the id_token was refused: {exc}") from exc
        if not isinstance(claims["sub"], str) or not claims["sub"]:
            raise SuspiciousOperation("the id_token names no subject")
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self.OIDC_RP_CLIENT_ID:
            raise SuspiciousOperation("the id_token was issued to another party (azp)")
        return dict(claims)

    def retrieve_matching_jwk(self, token: str) -> jwt.PyJWK:
        """The provider's key that signed `token`: the one of its `kid`, or without a kid the one key of its kind.

        The parent's version needs a `kid` on both sides; a provider with a single key may send none.
        """
        response = requests.get(self.OIDC_OP_JWKS_ENDPOINT, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        header = jwt.get_unverified_header(token)
        keys = [k for k in response.json().get("keys", []) if k.get("alg", header.get("alg")) == header.get("alg")]
        if header.get("kid") is not None:
            keys = [k for k in keys if k.get("kid") == header["kid"]]
        if len(keys) != 1:
            raise SuspiciousOperation("no single key of the provider's JWKS matches the id_token's header")
        return jwt.PyJWK(keys[0])

    def get_token(self, payload: dict[str, Any]) -> dict[str, Any]:
        self.token_info = dict(super().get_token(payload))
        return self.token_info

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        """The person the verified id_token names, found or made, their roles set from their groups."""
        claims = self.claims(access_token, payload)
        user = person_for(claims)
        if user is None or not user.is_active:
            return None  # the callback's failure page: a deactivated account stays out
        remember(self.request, claims, self.token_info)
        return user

    def claims(self, access_token: str | None, payload: dict[str, Any]) -> dict[str, Any]:
        """The id_token's claims with the userinfo endpoint's beside them (groups and email may be there only)."""
        if not self.OIDC_OP_USER_ENDPOINT or not access_token:
            return payload
        info = self.get_userinfo(access_token, None, payload)
        if info.get("sub") != payload["sub"]:
            # OpenID Connect Core 1.0, 5.3.2: a userinfo answer for another subject must not be used.
            raise SuspiciousOperation("the userinfo endpoint answered for another subject")
        return {**info, **payload}

    def recheck(self, request: HttpRequest) -> dict[str, Any]:
        """Ask the provider again about the signed-in person: their current claims, or an exception when refused."""
        self.request = request
        session = request.session
        access_token = session.get(ACCESS_TOKEN)
        if session.get(REFRESH_TOKEN):
            grant = {"grant_type": "refresh_token", "refresh_token": session[REFRESH_TOKEN]}
            tokens = self.get_token({**grant, "client_id": self.OIDC_RP_CLIENT_ID, "client_secret": self._secret()})
            access_token = tokens.get("access_token")
        if not access_token or not self.OIDC_OP_USER_ENDPOINT:
            raise SuspiciousOperation("the provider gave nothing to re-check the person with")
        info = dict(self.get_userinfo(access_token, None, {}))
        if info.get("sub") != session.get(SUBJECT):
            raise SuspiciousOperation("the provider answered for another subject")
        return {**info, "iss": settings.OIDC_ISSUER}

    def _secret(self) -> str:
        return str(self.OIDC_RP_CLIENT_SECRET)


def groups_of(claims: dict[str, Any]) -> list[str]:
    """The groups claim (OIDC_GROUPS_CLAIM) as a list of names; anything that is not a list of strings is no groups."""
    value = claims.get(settings.OIDC_GROUPS_CLAIM, [])
    if isinstance(value, str):
        value = [value]
    return [g for g in value if isinstance(g, str)] if isinstance(value, list) else []


def person_for(claims: dict[str, Any]) -> Any:
    """The user of (iss, sub): linked before, or linked now by a verified email, or made now. Then roles from groups.

    One transaction: the account, the identity row and the role changes are
    written together or not at all. Two first sign-ins of one subject at once
    (or of two people wanting one username): the unique constraints let one
    through; the other is rolled back whole and tried once more, when it finds
    the identity (or the name) the first one made.
    """
    try:
        return _person_for(claims)
    except IntegrityError:
        log.info("first sign-in of %s raced another; trying again", claims.get("sub"))
        return _person_for(claims)


def _person_for(claims: dict[str, Any]) -> Any:
    issuer, sub = settings.OIDC_ISSUER, str(claims["sub"])
    with transaction.atomic():
        identity = OidcIdentity.objects.select_related("user").filter(issuer=issuer, sub=sub).first()
        user = identity.user if identity else _linked_or_new(claims)
        if identity is None:
            identity = OidcIdentity(user=user, issuer=issuer, sub=sub)
        identity.email = str(claims.get("email") or "")[:320]
        identity.groups = groups_of(claims)
        identity.last_seen_at = timezone.now()
        identity.save()
        if user.is_active:
            sync_roles(user, identity.groups, cause=f"oidc sign-in {issuer} {sub}"[:500], by="oidc")
    return user


def _linked_or_new(claims: dict[str, Any]) -> Any:
    """An account with the provider's email when the provider verified it and exactly one has it; else a new one."""
    users = get_user_model().objects
    email = claims.get("email")
    if isinstance(email, str) and email and claims.get("email_verified") is True:
        found = list(users.filter(email__iexact=email, oidc_identities__isnull=True)[:2])
        if len(found) == 1:
            log.info("sign-in of %s linked to existing account %s by verified email", claims["sub"], found[0])
            return found[0]
    user = users.create_user(_free_username(claims), email=email if isinstance(email, str) else "")
    # Staff status opens the console (docs/decisions.md, "Trust boundaries"); the roles come from the groups alone.
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    return user


def _free_username(claims: dict[str, Any]) -> str:
    """preferred_username, else the email, else the sub; a suffix when that name is taken already."""
    base = next((str(claims[k]) for k in ("preferred_username", "email", "sub") if claims.get(k)), "person")[:140]
    name, n = base, 1
    while get_user_model().objects.filter(username=name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


def remember(request: HttpRequest, claims: dict[str, Any], tokens: dict[str, Any]) -> None:
    """Keep in the session who signed in, when they were checked, and the tokens a re-check needs."""
    session = request.session
    session[SUBJECT] = str(claims["sub"])
    session[CHECKED_AT] = time.time()
    for key, name in ((ACCESS_TOKEN, "access_token"), (REFRESH_TOKEN, "refresh_token")):
        if tokens.get(name):
            session[key] = tokens[name]


class RecheckMiddleware:
    """Re-checks a person signed in by the provider at most every OIDC_RENEW_SECONDS (docs/identity.md, "Sessions").

    Server-side, on any method: the provider is asked with the refresh token (or
    the access token); new claims re-set the roles from the groups; a refusal, an
    unknown person or a provider that cannot be reached ends the session, and the
    request goes on signed out (a page sends to the sign-in page, the API answers 401).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if enabled() and _due(request):
            _recheck(request)
        return self.get_response(request)


def _due(request: HttpRequest) -> bool:
    session = getattr(request, "session", None)
    if session is None or SUBJECT not in session or not request.user.is_authenticated:
        return False
    return bool(time.time() >= float(session.get(CHECKED_AT, 0)) + settings.OIDC_RENEW_SECONDS)


def _recheck(request: HttpRequest) -> None:
    user: Any = request.user  # signed in (_due checked it)
    backend = ProviderBackend()
    try:
        claims = backend.recheck(request)
        with transaction.atomic():
            OidcIdentity.objects.filter(user_id=user.pk, issuer=settings.OIDC_ISSUER, sub=claims["sub"]).update(
                groups=groups_of(claims), last_seen_at=timezone.now()
            )
            cause = f"oidc re-check {settings.OIDC_ISSUER} {claims['sub']}"
            sync_roles(user, groups_of(claims), cause=cause[:500], by="oidc")
    except (SuspiciousOperation, requests.RequestException, ValueError, KeyError) as exc:
        log.warning("session of %s ended: the provider's re-check failed: %s", user, exc)
        auth.logout(request)
        return
    remember(request, claims, backend.token_info)
