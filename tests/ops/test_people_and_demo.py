"""`createuser` for auditors and approvers, and `seed_demo` as a newcomer meets it after `make run`."""

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db.models import F
from django.test import Client

from suspensions import services
from suspensions.models import ApiToken, Membership, Run, Suspension
from suspensions.principals import Principal
from tests.helpers import client, member

pytestmark = pytest.mark.django_db


def create(*args: str) -> str:
    out = StringIO()
    call_command("createuser", *args, stdout=out)
    return out.getvalue()


def roles_of(username: str) -> set[tuple[str, str]]:
    return set(Membership.objects.filter(user__username=username).values_list("scope", "role"))


def people() -> dict[str, object]:
    users = get_user_model().objects.order_by("username")
    return {
        "users": list(users.values_list("username", "is_staff", "password", "email")),
        "memberships": sorted(Membership.objects.values_list("user__username", "scope", "role")),
    }


# -- createuser -----------------------------------------------------------------------------------


def test_createuser_makes_a_staff_user_who_can_sign_in_to_the_console():
    said = create("ada", "--scope", "acme/support", "--roles", "auditor,approver", "--password", "long-enough-pw")
    ada = get_user_model().objects.get(username="ada")
    assert ada.is_staff and not ada.is_superuser and ada.check_password("long-enough-pw")
    assert roles_of("ada") == {("acme/support", "auditor"), ("acme/support", "approver")}
    assert said.strip() == "created staff user ada: approver,auditor in acme/support"
    browser = Client()
    assert browser.login(username="ada", password="long-enough-pw")
    assert browser.get("/console/approvals/").status_code == 200


def test_createuser_again_sets_the_roles_of_that_scope_and_keeps_the_rest():
    create("ada", "--scope", "acme", "--roles", "approver,operator", "--password", "long-enough-pw")
    create("ada", "--scope", "globex", "--roles", "auditor", "--password", "long-enough-pw")
    get_user_model().objects.filter(username="ada").update(is_staff=False)
    said = create("ada", "--scope", "acme", "--roles", "auditor,approver")
    ada = get_user_model().objects.get(username="ada")
    assert roles_of("ada") == {("acme", "approver"), ("acme", "auditor"), ("globex", "auditor")}
    assert ada.is_staff and ada.check_password("long-enough-pw")
    assert get_user_model().objects.count() == 1
    assert said.startswith("updated staff user ada")


def test_createuser_without_a_password_and_without_a_terminal_prints_a_generated_one_once():
    said = create("bea", "--scope", "acme", "--roles", "auditor", "--email", "bea@example.com")
    secret = said.strip().splitlines()[-1]
    bea = get_user_model().objects.get(username="bea")
    assert bea.check_password(secret) and len(secret) >= 20
    assert bea.email == "bea@example.com"


@pytest.mark.parametrize(
    "args",
    [
        ("--scope", "Not A Scope", "--roles", "auditor", "--password", "long-enough-pw"),
        ("--scope", "acme", "--roles", "auditor,wizard", "--password", "long-enough-pw"),
        ("--scope", "acme", "--roles", " , ", "--password", "long-enough-pw"),
        ("--scope", "acme", "--roles", "auditor", "--password", "short"),
        ("--scope", "acme", "--roles", "auditor", "--password", "long-enough-pw", "--email", "not an address"),
    ],
    ids=["bad-scope", "unknown-role", "no-role", "short-password", "bad-email"],
)
def test_createuser_refuses_bad_input_and_writes_nothing(args):
    member("ada", {"acme": ["approver"]}, is_staff=True)
    before = people()
    for username in ("ada", "newcomer"):
        with pytest.raises(CommandError):
            create(username, *args)
    assert people() == before


def test_createuser_refuses_a_user_name_django_would_not_accept():
    with pytest.raises(CommandError):
        create("no spaces allowed", "--scope", "acme", "--roles", "auditor", "--password", "long-enough-pw")
    assert people() == {"users": [], "memberships": []}


# -- seed_demo -------------------------------------------------------------------------------------


def seed() -> str:
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


def demo_token(printed: str) -> str:
    """The token's line: the token alone, to copy."""
    return next(line for line in printed.splitlines() if line.startswith("sus_"))


def test_seed_demo_deadlines_leave_a_newcomer_time_to_read_the_readme():
    seed()
    waits = Suspension.objects.filter(scope="demo").annotate(wait=F("expires_at") - F("created_at"))
    shortest = min(s.wait for s in waits)
    # The shortest still shows a ticking countdown and the dashboard's "expires within the hour".
    assert timedelta(minutes=30) <= shortest < timedelta(hours=1)


def test_seed_demo_keeps_exactly_one_working_demo_token():
    first = demo_token(seed())
    again = seed()
    second = demo_token(again)
    assert "revoked the previous demo token" in again
    assert ApiToken.objects.filter(scope="demo", revoked=False).count() == 1
    assert client(first).get("/api/v1/runs").status_code == 401
    assert client(second).get("/api/v1/runs").status_code == 200


def test_seed_demo_prints_the_login_address_of_the_port_actually_served(settings):
    settings.CONSOLE_BASE_URL = "http://127.0.0.1:9123"
    assert "login: http://127.0.0.1:9123/console/  user admin" in seed()


def test_seed_demo_pauses_a_fresh_set_once_every_demo_pause_is_gone():
    seed()
    engine = Principal(name="token:demo-engine", grants=(("demo", frozenset({"engine"})),))
    for run in Run.objects.filter(scope="demo"):
        services.cancel_run(principal=engine, run_id=run.id, revision=run.revision)
    assert not Suspension.objects.filter(scope="demo").exists()
    seed()
    assert Suspension.objects.filter(scope="demo").count() == Run.objects.filter(scope="demo").count() // 2
