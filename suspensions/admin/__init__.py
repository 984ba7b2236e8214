"""Django admin for auditors and admins (docs/decisions.md, "Trust boundaries").

Every registered ModelAdmin of this app derives from `ScopedAdmin`:

- A staff user sees only rows of the scopes where they hold a membership
  (any role), through `Principal.scope_q()` in `get_queryset`, so an
  out-of-scope row is missing from every list and its change page answers
  like a deleted one. Superusers see everything; an inactive or non-staff
  user sees nothing.
- Evidence and state rows are read-only here, superusers included: state
  changes only through the services, and evidence is never edited.
- Tokens and memberships are written (created, revoked, edited) by superusers
  only. A membership role is a power over runs, not over access: letting an
  operator mint tokens or grant memberships would let them widen their own
  powers. Staff users see the tokens and memberships of their scopes.
- Secret material (token hashes, decision-token hashes, webhook signing
  secrets) is never shown, searched or filterable.
- Webhook endpoints are created where their secret can be shown once (the
  console and the API); here superusers disable, enable or delete them, and
  messages and the outbox are read-only.
- Approval floors: staff users read those of their scopes; superusers set,
  change and delete them through the same services as the API and console.
- Users and groups carry no scope: superusers only.
"""

from django.contrib import admin

from . import access, delegations, floors, identity, notifications, provisioning, push, records, retention  # noqa: F401  (each registers its admins)

admin.site.site_header = "Suspensions admin"
admin.site.site_title = "Suspensions admin"
admin.site.index_title = "Runs, pauses, evidence and access"
