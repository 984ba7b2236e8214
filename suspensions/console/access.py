"""Who may open a console page: an active staff user (docs/decisions.md, "Trust boundaries"); an operator for the
configuration pages (webhooks, notification routes, floors)."""

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from ..models import Role
from ..principals import Principal, has_staff_access, principal_of


def staff_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Anonymous visitors go to the sign-in page; a signed-in user without staff access gets a 403 page.

    Not user_passes_test: its redirect would bounce a signed-in non-staff user
    between this view and the sign-in page, which sends signed-in users on.
    """

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not has_staff_access(request.user):
            return render(request, "registration/staff_only.html", status=403)
        return view(request, *args, **kwargs)

    return wrapper


def holds_operator(principal: Principal) -> bool:
    return principal.superuser or bool(principal.scopes_with(Role.OPERATOR))


def operator_only(nav: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """A staff-only view for operators: a staff user who is an operator nowhere gets a 403 page, `nav` lit in it.

    The configuration pages (webhooks, notification routes, floors) are the
    operators' alone, as their services are (services.webhooks.require_operator).
    """

    def operator_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @staff_required
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not holds_operator(principal_of(request)):
                return render(request, "console/not_operator.html", {"nav": nav}, status=403)
            return view(request, *args, **kwargs)

        return wrapper

    return operator_required
