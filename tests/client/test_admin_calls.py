"""Role mappings, role changes and legal holds through the client (docs/api.md §7.14, "Legal holds", and §7.15),
against the live server: each method's answer, and its refusals mapped to the client's error classes with nothing
written."""

import asyncio

import pytest
from django.contrib.auth.models import User
from suspensions_client import AsyncClient, Forbidden, InvalidRequest, InvalidState, LegalHold, NotFound, RoleMapping

from suspensions.models import LegalHold as HoldRow
from suspensions.models import RoleChange as ChangeRow
from suspensions.models import RoleMapping as MappingRow
from suspensions.services.role_mappings import sync_roles

pytestmark = pytest.mark.slow


def test_an_operator_maps_a_group_reads_it_and_deletes_it(connect):
    operator = connect("operator")
    mapping = operator.create_role_mapping(group="payments-approvers", scope="acme/payments", role="approver")
    assert isinstance(mapping, RoleMapping)
    assert (mapping.group, mapping.scope, mapping.role) == ("payments-approvers", "acme/payments", "approver")
    assert mapping.created_by and mapping.created_at.tzinfo is not None
    assert [m.id for m in operator.list_role_mappings().results] == [mapping.id]
    assert operator.get_role_mapping(mapping.id) == mapping

    assert operator.delete_role_mapping(mapping.id) == mapping
    assert not MappingRow.objects.exists()
    with pytest.raises(NotFound):
        operator.get_role_mapping(mapping.id)
    with pytest.raises(NotFound):
        operator.delete_role_mapping(mapping.id)


def test_a_create_resent_with_its_key_answers_the_first_mapping(connect):
    operator = connect("operator")
    first = operator.create_role_mapping(group="g", role="auditor", idempotency_key="map-once")
    again = operator.create_role_mapping(group="g", role="auditor", idempotency_key="map-once")
    assert again.id == first.id and first.scope == "acme"  # left out: the operator's one scope
    assert MappingRow.objects.count() == 1


def test_refused_mappings_raise_the_client_s_errors_and_write_nothing(connect):
    operator = connect("operator")
    operator.create_role_mapping(group="g", scope="acme", role="approver")
    with pytest.raises(InvalidRequest):  # the same group, scope and role again
        operator.create_role_mapping(group="g", scope="acme", role="approver")
    with pytest.raises(InvalidRequest) as machine:  # a machine's role, not a person's
        operator.create_role_mapping(group="g", scope="acme", role="engine")
    assert "role" in machine.value.problem["errors"]
    with pytest.raises(Forbidden):
        connect("operator", scope="globex").create_role_mapping(group="g", scope="acme", role="auditor")
    with pytest.raises(Forbidden):
        connect("approver").list_role_mappings()
    assert list(MappingRow.objects.values_list("group", "scope", "role")) == [("g", "acme", "approver")]


def test_an_auditor_lists_the_role_changes_a_sign_in_made(connect):
    connect("operator").create_role_mapping(group="payments-approvers", scope="acme/payments", role="approver")
    alice = User.objects.create_user("alice", is_staff=True)
    sync_roles(alice, ["payments-approvers"], cause="oidc sign-in https://id.example.com 00u1")
    sync_roles(alice, [], cause="oidc sign-in https://id.example.com 00u2")

    page = connect("auditor").list_role_changes(page_size=1)
    assert page.next is not None and len(page.results) == 1
    changes = page.results + connect("auditor").list_role_changes(cursor=page.next_cursor).results
    said = [(c.username, c.user_id, c.scope, c.role, c.change, c.cause) for c in changes]
    assert sorted(said) == [
        ("alice", alice.pk, "acme/payments", "approver", "added", "oidc sign-in https://id.example.com 00u1"),
        ("alice", alice.pk, "acme/payments", "approver", "removed", "oidc sign-in https://id.example.com 00u2"),
    ]
    assert {c.id for c in changes} == {str(pk) for pk in ChangeRow.objects.values_list("id", flat=True)}
    with pytest.raises(Forbidden):
        connect("engine").list_role_changes()


def test_an_auditor_holds_a_run_and_a_scope_then_releases_a_hold_once(connect):
    run = connect("engine").register("held-agent")
    auditor = connect("auditor")
    on_run = auditor.create_legal_hold(run=run, reason="case 7")
    assert isinstance(on_run, LegalHold)
    assert (on_run.run, on_run.scope, on_run.reason, on_run.active, on_run.released_at) == (
        run.id,
        "acme",
        "case 7",
        True,
        None,
    )
    on_scope = auditor.create_legal_hold(scope="acme/payments", reason="audit request 12")
    assert (on_scope.run, on_scope.scope) == (None, "acme/payments")
    assert [h.id for h in auditor.list_legal_holds().results] == [on_scope.id, on_run.id]  # newest first

    released = auditor.release_legal_hold(on_run.id)
    assert (released.id, released.active, released.released_by) == (on_run.id, False, on_run.created_by)
    assert released.released_at is not None
    with pytest.raises(InvalidState):
        auditor.release_legal_hold(on_run.id)
    assert HoldRow.objects.get(pk=on_run.id).released_at == released.released_at
    assert [h.active for h in auditor.list_legal_holds().results] == [True, False]


def test_refused_holds_raise_the_client_s_errors_and_write_nothing(connect):
    auditor = connect("auditor")
    run = connect("engine").register("a")
    with pytest.raises(InvalidRequest):  # both a scope and a run
        auditor.create_legal_hold(scope="acme", run=run.id, reason="both")
    with pytest.raises(InvalidRequest):  # neither
        auditor.create_legal_hold(reason="neither")
    with pytest.raises(Forbidden):
        auditor.create_legal_hold(scope="globex", reason="not mine")
    with pytest.raises(NotFound):  # a run the caller cannot see
        connect("auditor", scope="globex").create_legal_hold(run=run.id, reason="not mine")
    with pytest.raises(Forbidden):
        connect("approver").list_legal_holds()
    with pytest.raises(NotFound):
        auditor.release_legal_hold("00000000-0000-0000-0000-000000000000")
    assert not HoldRow.objects.exists()


def test_the_async_client_maps_a_group_and_holds_a_scope(base_url, token):
    secret = token("acme", ["operator"], "async-operator")

    async def calls():
        async with AsyncClient(base_url, secret) as operator:
            mapping = await operator.create_role_mapping(group="async-group", role="operator")
            hold = await operator.create_legal_hold(scope="acme", reason="async case")
            listed = (await operator.list_role_mappings()).results, (await operator.list_legal_holds()).results
            return mapping, hold, listed, await operator.release_legal_hold(hold.id)

    mapping, hold, (mappings, holds), released = asyncio.run(calls())
    assert [m.id for m in mappings] == [mapping.id] and [h.id for h in holds] == [hold.id]
    assert MappingRow.objects.get().group == "async-group"
    assert not released.active and HoldRow.objects.get().released_by == released.released_by
