"""The sign-in through the identity provider (docs/identity.md), for the console and the admin alike.

mozilla-django-oidc's two views: the first sends the browser to the provider
with state, nonce and a PKCE challenge; the callback takes the code back.
Here the provider's endpoint comes from discovery (suspensions/oidc.py), and
a callback that fails for any reason (a forged or replayed state, a wrong
nonce, an id_token of another issuer or audience or an expired one, a code the
provider refuses, a provider that cannot be reached) answers a page that says
so, 400 (502 when the provider could not be reached), having written nothing.
"""

import logging
from typing import Any

import jwt
import requests
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.generic import View
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from .. import oidc

log = logging.getLogger("suspensions.identity")


def failed(request: HttpRequest, reason: str, status: int = 400) -> HttpResponse:
    return render(request, "registration/sign_in_failed.html", {"reason": reason}, status=status)


class StartSignIn(OIDCAuthenticationRequestView):
    """Off (404) unless OIDC_ISSUER is set."""

    def __init__(self, **kwargs: Any) -> None:
        View.__init__(self, **kwargs)  # not the parent's: it reads the endpoint from settings, here from discovery

    def get(self, request: HttpRequest) -> HttpResponse:
        if not oidc.enabled():
            raise Http404("single sign-on is not set up")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = oidc.discovery()["authorization_endpoint"]
        except (requests.RequestException, ValueError, KeyError, SuspiciousOperation) as exc:
            log.warning("sign-in not started: the provider's discovery failed: %s", exc)
            return failed(request, "The identity provider could not be reached. Try again in a moment.", 502)
        self.OIDC_RP_CLIENT_ID = oidc.settings.OIDC_CLIENT_ID
        return super().get(request)


class FinishSignIn(OIDCAuthenticationCallbackView):
    def get(self, request: HttpRequest) -> HttpResponse:
        if not oidc.enabled():
            raise Http404("single sign-on is not set up")
        if request.GET.get("error"):
            log.info("sign-in refused by the provider: %s", request.GET.get("error"))
        try:
            return super().get(request)
        except SuspiciousOperation as exc:
            log.warning("sign-in refused: %s", exc)
            return failed(request, f"The sign-in was refused: {exc}. Start again from the sign-in page.")
        except requests.HTTPError as exc:
            log.warning("sign-in refused by the provider's token endpoint: %s", exc)
            return failed(request, "The identity provider refused the sign-in code (used already, or expired).")
        except requests.RequestException as exc:
            log.warning("sign-in failed: the provider could not be reached: %s", exc)
            return failed(request, "The identity provider could not be reached. Try again in a moment.", 502)
        except (jwt.PyJWTError, ValueError, KeyError, TypeError) as exc:
            # A malformed token or answer (not JSON, a claim missing or of the wrong type): refused, not a 500.
            log.warning("sign-in refused: the provider's answer was malformed: %r", exc)
            return failed(request, "The identity provider's answer could not be read. Start again from the sign-in.")

    def login_failure(self) -> HttpResponse:
        return failed(self.request, "The sign-in did not complete: no account may sign in with what the provider sent.")

    def login_success(self) -> HttpResponse:
        log.info("signed in through the identity provider: %s", self.user)
        return super().login_success()  # type: ignore[no-any-return]
