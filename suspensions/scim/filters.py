"""SCIM filters (`userName eq "alice@example.com"`) as SQL, by django-scim2's parser (scim2-filter-parser).

Each attribute a provider filters on names one column; the parser binds every
value as a parameter. An attribute not listed matches nothing.
"""

from typing import Any

from django.contrib.auth import get_user_model
from django_scim.filters import FilterQuery

from ..models import ScimGroup, ScimUser


def scim_users() -> Any:
    return ScimUser


def scim_groups() -> Any:
    return ScimGroup


def _people_table() -> str:
    return str(get_user_model()._meta.db_table)


class UserFilterQuery(FilterQuery):
    model_getter = scim_users
    joins = (f"JOIN {_people_table()} ON {_people_table()}.id = {ScimUser._meta.db_table}.user_id",)
    attr_map = {
        ("id", None, None): f"{ScimUser._meta.db_table}.scim_id",
        ("externalId", None, None): f"{ScimUser._meta.db_table}.external_id",
        ("userName", None, None): f"{_people_table()}.username",
        ("active", None, None): f"{_people_table()}.is_active",
        ("emails", "value", None): f"{_people_table()}.email",
        ("emails", None, None): f"{_people_table()}.email",
    }


class GroupFilterQuery(FilterQuery):
    model_getter = scim_groups
    attr_map = {
        ("id", None, None): f"{ScimGroup._meta.db_table}.scim_id",
        ("externalId", None, None): f"{ScimGroup._meta.db_table}.external_id",
        ("displayName", None, None): f"{ScimGroup._meta.db_table}.display_name",
    }
