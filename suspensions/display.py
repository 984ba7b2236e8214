"""Engine text shown to a person (an email, a Slack message, a console page): no control characters. Pure functions.

A tool name, an agent id or a call id reaches an approver's email as a line
of its plain-text body. A line break inside one would start a line the
engine wrote, such as a forged `Approve:` link above the real one; a
bidirectional override would show the text in another order than it is.
The API refuses these characters in every name and id a person sees
(wire/base.Shown, docs/api.md "Names and ids"); what is rendered escapes
them anyway (`escaped`), for rows stored before the rule and for arguments,
whose JSON may hold raw line breaks between its values.
"""

import re

# C0 controls (line breaks and tabs included), DEL, C1 controls (U+0085 is a line break to some readers),
# the Unicode line and paragraph separators, and the bidirectional marks, embeddings, overrides and isolates.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
RULE = "Must not contain control characters (line breaks, tabs, bidirectional overrides)."
SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def has_control(text: str) -> bool:
    return CONTROL.search(text) is not None


def escaped(text: str) -> str:
    """The text on one line: each control character as a visible escape (`\\n`, `\\u202e`)."""
    return CONTROL.sub(lambda m: SHORT.get(m.group(), f"\\u{ord(m.group()):04x}"), text)
