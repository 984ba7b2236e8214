"""Who may open a console page: an active staff user (docs/decisions.md, "Trust boundaries")."""

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from ..principals import has_staff_access


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
