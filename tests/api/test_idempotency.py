"""Idempotency-Key on the POSTs that create (docs/api.md, "4. Claims and recovery"): a lost answer is asked for again,
never done twice.

The same key with the same request answers the first answer again, status and
body, with `Idempotent-Replayed: true`; another request under that key is
`409 idempotency_mismatch`; a refusal keeps no key; keys are per principal and
live 24 hours. Races with real threads are in tests/races/test_idempotency_race.py.
"""

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from suspensions.models import ApprovalFloor, FlowWait, IdempotencyKey, Run, WebhookEndpoint, WebhookMessage
from suspensions.services import idempotency
from suspensions.tokens import create_token
from tests.helpers import client, envelope, member, refused, register

RUNS = "/api/v1/runs"
HOOK = {"scope": "acme", "url": "http://127.0.0.1:1/hooks", "event_types": ["approval.requested"]}


def keyed(c, url, body, key="key-1", raw=None):
    """POST `body` (or the `raw` text) with an Idempotency-Key."""
    text = raw if raw is not None else json.dumps(body)
    return c.post(url, data=text, content_type="application/json", HTTP_IDEMPOTENCY_KEY=key)


@pytest.fixture
def operator(db, token):
    return client(token("acme", ["operator"], "ops"))


def assert_replayed(first, again):
    assert (again.status_code, again.json()) == (first.status_code, first.json())
    assert again["Idempotent-Replayed"] == "true"
    assert not first.has_header("Idempotent-Replayed")


# -- the same request again ---------------------------------------------------------------------


def test_a_keyed_register_sent_again_answers_the_first_run_and_registers_one(engine):
    first = keyed(engine, RUNS, {"agent_id": "a1", "scope": "acme"})
    again = keyed(engine, RUNS, {"agent_id": "a1", "scope": "acme"})
    assert first.status_code == 201
    assert_replayed(first, again)
    assert [str(pk) for pk in Run.objects.values_list("id", flat=True)] == [first.json()["id"]]


def test_the_body_is_compared_as_json_values_so_key_order_and_spacing_do_not_count(engine):
    first = keyed(engine, RUNS, None, raw='{"agent_id": "a1", "scope": "acme"}')
    again = keyed(engine, RUNS, None, raw='{"scope":"acme","agent_id":"a1"}')
    assert_replayed(first, again)
    assert Run.objects.count() == 1


def test_without_a_key_every_register_is_a_new_run(engine):
    register(engine, "acme")
    register(engine, "acme")
    assert Run.objects.count() == 2
    assert not IdempotencyKey.objects.exists()


def test_a_keyed_park_sent_again_answers_the_first_correlation_id(engine):
    body = {"envelope": envelope(), "snapshot": {"step": 1}, "reason": "external_tool"}
    first = keyed(engine, "/api/v1/flow-waits", body)
    again = keyed(engine, "/api/v1/flow-waits", body)
    assert first.status_code == 201, first.content
    assert_replayed(first, again)
    assert FlowWait.objects.count() == 1


def test_a_keyed_webhook_create_answers_its_one_secret_again(operator):
    first = keyed(operator, "/api/v1/webhooks", HOOK)
    again = keyed(operator, "/api/v1/webhooks", HOOK)
    assert first.status_code == 201 and first.json()["secret"].startswith("whsec_")
    assert_replayed(first, again)
    assert WebhookEndpoint.objects.count() == 1


def test_the_stored_answer_is_sealed_at_rest(operator):
    first = keyed(operator, "/api/v1/webhooks", HOOK)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT body FROM {IdempotencyKey._meta.db_table}")
        (stored,) = cursor.fetchone()
    assert first.json()["secret"] not in stored
    assert json.loads(IdempotencyKey.objects.get().body) == first.json()


def test_a_data_key_rotation_seals_the_kept_answers_again_so_the_old_key_can_go(operator, settings):
    from cryptography.fernet import Fernet
    from django.core.management import call_command

    first = keyed(operator, "/api/v1/webhooks", HOOK)
    new_key = Fernet.generate_key().decode()
    settings.DATA_ENCRYPTION_KEYS = [new_key, *settings.DATA_ENCRYPTION_KEYS]
    call_command("rotate_data_keys", verbosity=0)
    settings.DATA_ENCRYPTION_KEYS = [new_key]
    assert_replayed(first, keyed(operator, "/api/v1/webhooks", HOOK))


def test_a_keyed_rotation_sent_again_rotates_once_and_answers_the_same_new_secret(operator):
    endpoint = keyed(operator, "/api/v1/webhooks", HOOK, key="create").json()
    url = f"/api/v1/webhooks/{endpoint['id']}/rotate-secret"
    first, again = keyed(operator, url, None, raw=""), keyed(operator, url, None, raw="")
    assert first.status_code == 200
    assert_replayed(first, again)
    assert WebhookEndpoint.objects.get().secret == first.json()["secret"] != endpoint["secret"]


def test_a_keyed_test_event_and_redelivery_sent_again_queue_one_message_each(operator):
    endpoint = keyed(operator, "/api/v1/webhooks", HOOK, key="create").json()
    url = f"/api/v1/webhooks/{endpoint['id']}/test"
    first, again = keyed(operator, url, {}, key="test"), keyed(operator, url, {}, key="test")
    assert first.status_code == 202
    assert_replayed(first, again)
    assert WebhookMessage.objects.count() == 1


def test_disable_and_enable_take_keys_like_any_keyed_post(operator):
    endpoint = keyed(operator, "/api/v1/webhooks", HOOK, key="create").json()
    off = keyed(operator, f"/api/v1/webhooks/{endpoint['id']}/disable", None, raw="", key="off")
    on = keyed(operator, f"/api/v1/webhooks/{endpoint['id']}/enable", None, raw="", key="on")
    off_again = keyed(operator, f"/api/v1/webhooks/{endpoint['id']}/disable", None, raw="", key="off")
    assert (off.json()["active"], on.json()["active"]) == (False, True)
    assert_replayed(off, off_again)
    assert WebhookEndpoint.objects.get().active  # the replay answered; it did not disable again


def test_a_keyed_approval_floor_create_sent_again_answers_the_first_floor(operator):
    first = keyed(operator, "/api/v1/approval-floors", {"scope": "acme", "quorum": 2})
    again = keyed(operator, "/api/v1/approval-floors", {"scope": "acme", "quorum": 2})
    assert first.status_code == 201
    assert_replayed(first, again)


# -- what happened since the first answer (docs/api.md §4; issue 50 item 8) -------------------------

FLOORS = "/api/v1/approval-floors"
ROUTES = "/api/v1/notification-routes"
ROUTE = {"scope": "acme", "kind": "email", "target": "ops@example.com"}


def test_a_replayed_floor_create_after_the_floor_was_deleted_is_410_deleted_since_and_makes_no_floor(operator):
    first = keyed(operator, FLOORS, {"scope": "acme", "quorum": 2}).json()
    assert operator.delete(f"{FLOORS}/{first['id']}").status_code == 200
    body = refused(lambda: keyed(operator, FLOORS, {"scope": "acme", "quorum": 2}), 410, "deleted_since")
    assert (body["id"], body["first_status"]) == (first["id"], 201)
    assert not ApprovalFloor.objects.exists()


def test_a_replayed_route_create_or_disable_after_the_route_was_deleted_is_410_deleted_since(operator):
    route = keyed(operator, ROUTES, ROUTE, key="create").json()
    keyed(operator, f"{ROUTES}/{route['id']}/disable", None, raw="", key="off")
    assert operator.delete(f"{ROUTES}/{route['id']}").status_code == 200
    refused(lambda: keyed(operator, ROUTES, ROUTE, key="create"), 410, "deleted_since")
    body = refused(
        lambda: keyed(operator, f"{ROUTES}/{route['id']}/disable", None, raw="", key="off"), 410, "deleted_since"
    )
    assert (body["id"], body["first_status"]) == (route["id"], 200)


def test_a_replayed_webhook_create_after_a_rotation_withholds_the_rotated_out_secret(operator):
    first = keyed(operator, "/api/v1/webhooks", HOOK, key="create").json()
    keyed(operator, f"/api/v1/webhooks/{first['id']}/rotate-secret", None, raw="", key="rotate")
    again = keyed(operator, "/api/v1/webhooks", HOOK, key="create")
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    withheld = again.json()
    assert withheld.pop("secret") is None and "rotated" in withheld.pop("secret_withheld")
    assert withheld == {k: v for k, v in first.items() if k != "secret"}
    assert WebhookEndpoint.objects.count() == 1


def test_a_replayed_rotation_after_a_second_rotation_withholds_its_secret_and_keeps_the_current_one(operator):
    endpoint = keyed(operator, "/api/v1/webhooks", HOOK, key="create").json()
    url = f"/api/v1/webhooks/{endpoint['id']}/rotate-secret"
    keyed(operator, url, None, raw="", key="first")
    second = keyed(operator, url, None, raw="", key="second").json()
    replayed = keyed(operator, url, None, raw="", key="first").json()
    assert replayed["secret"] is None and replayed["secret_withheld"]
    assert keyed(operator, url, None, raw="", key="second").json() == second  # the current secret still replays
    assert WebhookEndpoint.objects.get().secret == second["secret"]


def test_a_new_key_past_the_principals_allowance_is_429_with_retry_after_and_writes_nothing(engine, settings):
    settings.IDEMPOTENCY_KEYS_PER_PRINCIPAL = 2
    keyed(engine, RUNS, {"agent_id": "a1"}, key="k1")
    keyed(engine, RUNS, {"agent_id": "a1"}, key="k2")
    response = keyed(engine, RUNS, {"agent_id": "a1"}, key="k3")
    refused(lambda: response, 429, "throttled")
    assert 23 * 3600 < int(response["Retry-After"]) <= 24 * 3600
    assert Run.objects.count() == 2
    assert sorted(IdempotencyKey.objects.values_list("key", flat=True)) == ["k1", "k2"]


def test_at_the_allowance_a_key_already_held_still_replays_and_a_key_older_than_24_hours_makes_room(engine, settings):
    settings.IDEMPOTENCY_KEYS_PER_PRINCIPAL = 2
    first = keyed(engine, RUNS, {"agent_id": "a1"}, key="k1")
    keyed(engine, RUNS, {"agent_id": "a1"}, key="k2")
    assert_replayed(first, keyed(engine, RUNS, {"agent_id": "a1"}, key="k1"))
    IdempotencyKey.objects.filter(key="k1").update(
        created_at=IdempotencyKey.objects.get(key="k1").created_at - timedelta(hours=24)
    )
    assert keyed(engine, RUNS, {"agent_id": "a1"}, key="k3").status_code == 201


def test_the_allowance_is_per_principal(db, token, settings):
    settings.IDEMPOTENCY_KEYS_PER_PRINCIPAL = 1
    one, two = client(token("acme", ["engine"], "one")), client(token("acme", ["engine"], "two"))
    keyed(one, RUNS, {"agent_id": "a1"}, key="k1")
    assert keyed(two, RUNS, {"agent_id": "a1"}, key="k2").status_code == 201
    refused(lambda: keyed(one, RUNS, {"agent_id": "a1"}, key="k3"), 429, "throttled")


# -- another request under the same key ------------------------------------------------------------


def test_the_same_key_with_another_body_is_an_idempotency_mismatch_that_writes_nothing(engine):
    keyed(engine, RUNS, {"agent_id": "a1"})
    keys = list(IdempotencyKey.objects.values_list("id", "request_digest", "created_at"))
    body = refused(lambda: keyed(engine, RUNS, {"agent_id": "a2"}), 409, "idempotency_mismatch")
    assert body["first_request"] == "POST /api/v1/runs"
    assert list(IdempotencyKey.objects.values_list("id", "request_digest", "created_at")) == keys


def test_the_same_key_on_another_path_is_an_idempotency_mismatch(operator):
    keyed(operator, "/api/v1/webhooks", HOOK)
    refused(lambda: keyed(operator, "/api/v1/approval-floors", {"quorum": 2}), 409, "idempotency_mismatch")


# -- bad keys and refusals ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["", "x" * 256, "clé", "tab\there", "nul\x00"],
    ids=["empty", "256 characters", "not ascii", "a control character", "nul"],
)
def test_a_bad_key_is_400_naming_the_header_and_writes_nothing(engine, key):
    body = refused(lambda: keyed(engine, RUNS, {"agent_id": "a1"}, key=key), 400, "invalid_request")
    assert list(body["errors"]) == ["Idempotency-Key"]
    assert not IdempotencyKey.objects.exists()


def test_a_key_of_255_printable_characters_with_spaces_inside_is_accepted(engine):
    key = "a b~" + "z" * 251
    assert keyed(engine, RUNS, {"agent_id": "a1"}, key=key).status_code == 201
    assert IdempotencyKey.objects.get().key == key


def test_a_refused_request_keeps_no_key_so_the_corrected_one_may_use_it(engine):
    refused(lambda: keyed(engine, RUNS, {"agent_id": ""}), 400, "invalid_request")
    refused(lambda: keyed(engine, RUNS, {"agent_id": "a1", "scope": "globex"}), 403, "forbidden")
    refused(lambda: keyed(engine, RUNS, None, raw="{not json"), 400, "invalid_request")
    assert not IdempotencyKey.objects.exists()
    assert keyed(engine, RUNS, {"agent_id": "a1"}).status_code == 201


def test_a_refusal_of_the_service_keeps_no_key(operator):
    missing = "/api/v1/webhooks/01a22e4f-351f-71a9-8405-e222bcbd535d/rotate-secret"
    refused(lambda: keyed(operator, missing, None, raw=""), 404, "not_found")
    assert not IdempotencyKey.objects.exists()


# -- whose keys -----------------------------------------------------------------------------------


def test_keys_are_per_principal_two_tokens_with_one_key_make_two_runs(db, token):
    first = keyed(client(token("acme", ["engine"], "one")), RUNS, {"agent_id": "a1"})
    second = keyed(client(token("acme", ["engine"], "one")), RUNS, {"agent_id": "a1"})  # same name, another token
    assert (first.status_code, second.status_code) == (201, 201)
    assert first.json()["id"] != second.json()["id"]


def test_a_user_and_the_tokens_linked_to_it_share_their_keys(db):
    person = member("ana", {"acme": ["engine"]}, is_staff=True)
    tokens = [create_token(scope="acme", roles=["engine"], name=f"t{n}", user=person)[1] for n in (1, 2)]
    first = keyed(client(tokens[0]), RUNS, {"agent_id": "a1"})
    again = keyed(client(tokens[1]), RUNS, {"agent_id": "a1"})
    assert_replayed(first, again)


# -- 24 hours ---------------------------------------------------------------------------------------


def age(hours):
    IdempotencyKey.objects.update(created_at=IdempotencyKey.objects.get().created_at - timedelta(hours=hours))


def test_a_key_older_than_24_hours_is_free_again_even_before_the_sweep(engine):
    keyed(engine, RUNS, {"agent_id": "a1"})
    age(24)
    fresh = keyed(engine, RUNS, {"agent_id": "a2"})
    assert fresh.status_code == 201 and not fresh.has_header("Idempotent-Replayed")
    assert Run.objects.count() == 2
    assert IdempotencyKey.objects.get().status == 201


def test_the_beat_task_deletes_keys_past_24_hours_and_keeps_younger_ones(engine):
    from suspensions.tasks import forget_idempotency_keys

    keyed(engine, RUNS, {"agent_id": "a1"}, key="old")
    age(25)
    keyed(engine, RUNS, {"agent_id": "a1"}, key="young")
    assert forget_idempotency_keys() == 1
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["young"]


# -- cost -----------------------------------------------------------------------------------------


def statements(c, **headers):
    with CaptureQueriesContext(connection) as queries:
        response = c.post(RUNS, data='{"agent_id": "a1"}', content_type="application/json", **headers)
    assert response.status_code == 201
    return [q["sql"] for q in queries.captured_queries]


def test_a_request_without_a_key_costs_no_statement_more_and_a_keyed_one_three(engine):
    register(engine)  # the token's last_used_at is written once, on its first request
    plain = statements(engine)
    keyed_ = statements(engine, HTTP_IDEMPOTENCY_KEY="k")
    table = IdempotencyKey._meta.db_table
    assert not [q for q in plain if table in q]
    assert len([q for q in keyed_ if table in q]) == 3  # the allowance, the take and the keep
    # Beyond those three, only the transaction around the view: here a savepoint and its release (the test's own
    # transaction holds it); a real request's BEGIN and COMMIT.
    assert len(keyed_) == len(plain) + 5


def test_owner_of_names_the_user_behind_a_token_or_the_token_itself(db, token):
    person = member("bo", {"acme": ["engine"]}, is_staff=True)
    _, linked = create_token(scope="acme", roles=["engine"], name="t", user=person)
    linked_run = keyed(client(linked), RUNS, {"agent_id": "a1"}, key="k1")
    unlinked_run = keyed(client(token("acme", ["engine"], "u")), RUNS, {"agent_id": "a1"}, key="k2")
    assert linked_run.status_code == unlinked_run.status_code == 201
    owners = dict(IdempotencyKey.objects.values_list("key", "principal"))
    assert owners["k1"] == f"user#{person.pk}"
    assert owners["k2"].startswith("token#")
    assert idempotency.LIFETIME == timedelta(hours=24)
