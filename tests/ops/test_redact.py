"""redact.text, which every log line passes through (docs/deploy.md, "Logs"): a capability path never stays,
in any of its spellings, and a line without one comes back as it was (the substring screen in front of the
pattern lets no spelling through)."""

import json

import pytest

from suspensions.observability import redact

SECRET = "tok_9f2a-Xy"


@pytest.mark.parametrize(
    ("sent", "shown"),
    [
        (f"/console/act/{SECRET}", "/console/act/<redacted>"),
        (f"/api/v1/callbacks/{SECRET}", "/api/v1/callbacks/<redacted>"),
        (f"next=%2Fconsole%2Fact%2F{SECRET}", "next=%2Fconsole%2Fact%2F<redacted>"),
        (f"next=%2fapi%2fv1%2fcallbacks%2f{SECRET}", "next=%2fapi%2fv1%2fcallbacks%2f<redacted>"),
        (f"/api/v1/callbacks/{SECRET}?x=1", "/api/v1/callbacks/<redacted>?x=1"),
    ],
)
def test_every_spelling_of_a_capability_path_is_redacted_inside_a_json_line(sent, shown):
    line = json.dumps({"message": f"Not Found: {sent}", "path": sent})

    out = redact.text(line)

    assert SECRET not in out
    assert json.loads(out) == {"message": f"Not Found: {shown}", "path": shown}


@pytest.mark.parametrize(
    "line",
    [
        '{"message": "POST /api/v1/runs/01a2/resume 201", "route": "run-resume", "status": 201}',
        "started run 01a2 at revision 3: transaction committed, action taken",
        "/console/actions/ and /api/v1/callbacks without a token",
    ],
)
def test_a_line_without_a_capability_comes_back_unchanged(line):
    assert redact.text(line) == line
