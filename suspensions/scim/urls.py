"""/scim/v2/ (docs/identity.md, "Provisioning (SCIM) and leavers"): Users, Groups and the discovery documents.

The library's own routes with the strict views of views.py; Bulk, Me and the
root search answer 501, as the ServiceProviderConfig says.
"""

from django.urls import re_path
from django_scim import views as library

from . import views

app_name = "scim"

urlpatterns = [
    re_path(r"^$", library.SCIMView.as_view(implemented=False), name="root"),
    re_path(r"^\.search$", library.SearchView.as_view(implemented=False), name="search"),
    re_path(r"^Users/\.search$", views.UserSearchView.as_view(), name="users-search"),
    re_path(r"^Users(?:/(?P<uuid>[^/]+))?$", views.UsersView.as_view(), name="users"),
    re_path(r"^Groups/\.search$", views.GroupSearchView.as_view(), name="groups-search"),
    re_path(r"^Groups(?:/(?P<uuid>[^/]+))?$", views.GroupsView.as_view(), name="groups"),
    re_path(r"^Me$", library.SCIMView.as_view(implemented=False), name="me"),
    re_path(r"^ServiceProviderConfig$", library.ServiceProviderConfigView.as_view(), name="service-provider-config"),
    re_path(r"^ResourceTypes(?:/(?P<uuid>[^/]+))?$", library.ResourceTypesView.as_view(), name="resource-types"),
    re_path(r"^Schemas(?:/(?P<uuid>[^/]+))?$", library.SchemasView.as_view(), name="schemas"),
    re_path(r"^Bulk$", library.SCIMView.as_view(implemented=False), name="bulk"),
]
