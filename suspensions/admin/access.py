"""Tokens and memberships (written by superusers only); users, groups and Slack identities (superusers only)."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from ..models import (
    ApiToken,
    Membership,
    Role,
    SlackIdentity,
)
from ..principals import STAFF_ROLES
from ..tokens import create_token
from .base import ScopedAdmin, SuperuserOnlyAdmin, clean_scope


class TokenAddForm(forms.ModelForm):
    """Only what a new token needs; the secret is generated on save and never stored."""

    scope = forms.CharField(max_length=192, help_text="workspace[/project[/team]]")
    role_set = forms.MultipleChoiceField(
        label="Roles", choices=Role.choices, widget=forms.CheckboxSelectMultiple, required=True
    )

    class Meta:
        model = ApiToken
        fields = ("name",)

    def clean_scope(self) -> str:
        return clean_scope(self.cleaned_data["scope"])


@admin.register(ApiToken)
class ApiTokenAdmin(ScopedAdmin):
    """Superusers create and revoke tokens; staff users see those of their scopes. Never deleted: revoke instead.

    The secret is shown once, in the page that answers the add POST, and never
    in a message: messages travel in a signed, not encrypted, cookie.
    """

    # No delete: revoke instead; a deleted token leaves event actors nobody can trace.
    superuser_writes = ("add", "change")
    list_display = (
        "name",
        "prefix",
        "scope",
        "roles",
        "acts_for",
        "revoked",
        "expires_at",
        "created_at",
        "last_used_at",
    )
    list_filter = ("revoked", "scope_l1")
    search_fields = ("name", "prefix", "scope", "roles")
    date_column = "created_at"
    readonly_fields = (
        "name",
        "scope",
        "roles",
        "user",
        "acts_for",
        "prefix",
        "revoked",
        "expires_at",
        "created_at",
        "last_used_at",
    )
    actions = ("revoke",)

    @admin.display(description="Acts for")
    def acts_for(self, obj: ApiToken) -> str:
        """What the linked user's status does to the token (issue 32), said where the token is looked at."""
        user = obj.user
        if user is None:
            return "no one (not linked to a user)"
        if not user.is_active:
            return f"{user.get_username()}, who is inactive: the token is refused (401) until they are active again"
        if not user.is_staff:
            held = ", ".join(sorted(obj.role_set & STAFF_ROLES)) or "none"
            return f"{user.get_username()}, who is not staff: the roles of people ({held}) do not count"
        return f"{user.get_username()} (active staff)"

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = TokenAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.readonly_fields if obj is not None else ()

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.readonly_fields if obj is not None else ("name", "scope", "role_set")

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if change:
            return  # every field of an existing token is read-only; revocation is the action
        token, secret = create_token(
            scope=form.cleaned_data["scope"], roles=form.cleaned_data["role_set"], name=form.cleaned_data["name"]
        )
        # The admin goes on with `obj` (log entry, response): make it the row we created.
        obj.__dict__.update({k: v for k, v in token.__dict__.items() if k != "_state"})
        obj._state.adding = False
        # Only for response_add of this request; the secret is stored nowhere.
        request._token_secret = secret  # type: ignore[attr-defined]

    def response_add(self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None) -> HttpResponse:
        # Rendered, not redirected: a redirect would have to carry the secret in a message (a cookie).
        context = {
            **self.admin_site.each_context(request),
            "title": "Token created",
            "opts": self.opts,
            "token": obj,
            "secret": request._token_secret,  # type: ignore[attr-defined]
        }
        return TemplateResponse(request, "admin/suspensions/apitoken/secret.html", context)

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        n = queryset.filter(revoked=False).update(revoked=True)
        self.message_user(request, f"Revoked {n} token{'s' if n != 1 else ''}.", messages.SUCCESS)


class MembershipForm(forms.ModelForm):
    class Meta:
        model = Membership
        fields = ("user", "scope", "role")

    def clean_scope(self) -> str:
        return clean_scope(self.cleaned_data["scope"])


@admin.register(Membership)
class MembershipAdmin(ScopedAdmin):
    """Superusers grant, edit and remove memberships; staff users see those of their scopes."""

    superuser_writes = ("add", "change", "delete")
    form = MembershipForm
    # Provider-given rows (source "provider") are shown apart by the filter; services.role_mappings rewrites them
    # at each sign-in or SCIM call, so one changed here by hand changes back then.
    list_display = ("user", "scope", "role", "source")
    list_filter = ("source", "role", "scope_l1")
    search_fields = ("user__username", "scope")
    autocomplete_fields = ("user",)

    def save_model(self, request: HttpRequest, obj: Membership, form: Any, change: bool) -> None:
        obj.stamp_scope(form.cleaned_data["scope"])
        super().save_model(request, obj, form, change)


@admin.register(SlackIdentity)
class SlackIdentityAdmin(SuperuserOnlyAdmin, admin.ModelAdmin):
    """Which Slack member acts as which user (docs/notifications.md, "Who a Slack user is"): superusers link, correct or
    remove them.

    Superusers only, like users: a staff user who could link their own Slack id to
    another account would decide approvals in that person's name.
    """

    list_display = ("slack_user_id", "user", "linked_by", "linked_at")
    search_fields = ("slack_user_id", "user__username", "user__email")
    autocomplete_fields = ("user",)
    readonly_fields = ("linked_by", "linked_at")

    def save_model(self, request: HttpRequest, obj: SlackIdentity, form: Any, change: bool) -> None:
        obj.linked_by = f"user:{request.user.get_username()}"
        super().save_model(request, obj, form, change)


@admin.register(User)
class SuperuserOnlyUserAdmin(SuperuserOnlyAdmin, UserAdmin):
    pass


@admin.register(Group)
class SuperuserOnlyGroupAdmin(SuperuserOnlyAdmin, GroupAdmin):
    pass
