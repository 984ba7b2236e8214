"""Issue 32 item 3 on the console: an edit against a schema that cannot be applied is a message, not an HTML 500."""

from html import unescape

from tests.api.test_schema_safety import stored_before_the_checks, unreached
from tests.console.test_console_policies import decide, field_box, signed_in
from tests.helpers import snapshot


def test_an_edit_against_a_schema_stored_before_the_checks_is_said_by_its_field(engine):
    alice = signed_in("alice")
    s = stored_before_the_checks(engine, unreached("#/$defs/missing"))
    before = snapshot()
    response = decide(alice, s, follow=False, **{"arguments:c1": '{"amount": 450}'})
    assert response.status_code == 200
    box = unescape(field_box(response.content.decode(), 0))
    assert "its arguments schema cannot be applied" in box and "#/$defs/missing" in box
    assert snapshot() == before
