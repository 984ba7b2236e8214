"""Tags on runs and pauses (docs/api.md, "`POST /runs` — register (T1)"): the rule, in one place. Pure functions.

A tag is 1 to 64 characters of `[a-z0-9._:-]` (so `team:billing`,
`env.prod`, `ticket-4411` are tags; spaces and capitals are not); a run or a
pause carries at most 10, each once. Lists filter by `?tag=` (repeatable:
every tag named must be present).
"""

import re
from collections.abc import Iterable
from typing import Any

MAX_TAGS = 10
MAX_LENGTH = 64
TAG = re.compile(r"[a-z0-9._:-]{1,64}\Z")
RULE = "Each tag is 1 to 64 characters of a-z, 0-9 and . _ : - ; at most 10, each once."


def valid(value: Any) -> bool:
    """True for a list of at most 10 distinct tags."""
    return (
        type(value) is list
        and len(value) <= MAX_TAGS
        and all(type(tag) is str and TAG.match(tag) for tag in value)
        and len(set(value)) == len(value)
    )


def merged(*groups: Iterable[str]) -> list[str]:
    """The tags of several rows (a run and its pause), each once, in order of first appearance."""
    return list(dict.fromkeys(tag for group in groups for tag in group))
