"""`suspensions-verify FILE --public-key KEY`: check an audit export offline (docs/auditors.md, "Verify offline").

What it checks, trusting only the public key (kept from a trusted moment):

- every run's chain in the export: each event's hash recomputed, each link to
  the event before it; a run exported whole (its first event chains from 64
  zeros) is checked from its start, a run cut by `since` from its first
  exported event on;
- every checkpoint's Ed25519 signature (over the text that names its
  workspace; a legacy checkpoint, workspace "", over the first text), and
  each workspace's chain of roots: each checkpoint's `previous` is the root
  of the one before it in its workspace, seq without gaps;
- each checkpoint's root recomputed from its lines, when the export holds
  them all (`complete`); each line against the exported events, when the
  export holds that run whole: the event at `event_count` has `head_hash`.

Exit status 0 when everything holds; 1 naming each problem; 2 for a file or key that cannot be read.
Needs the `cryptography` package (`pip install "suspensions-client[verify]"`).
"""

import argparse
import base64
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import audit


@dataclass
class Verdict:
    runs: int = 0
    events: int = 0
    checkpoints: int = 0
    lines_checked: int = 0
    problems: list[str] = field(default_factory=list)


def read_export(lines: Iterable[str]) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """The export's events grouped by run (in file order) and its checkpoints."""
    runs: dict[str, list[dict[str, Any]]] = {}
    checkpoints: list[dict[str, Any]] = []
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        line = json.loads(text)
        if line.get("type") == "event":
            runs.setdefault(line["run_id"], []).append(line)
        elif line.get("type") == "checkpoint":
            checkpoints.append(line)
        else:
            raise ValueError(f"line {number}: unknown type {line.get('type')!r}")
    return runs, checkpoints


def check_runs(runs: Mapping[str, list[dict[str, Any]]], verdict: Verdict) -> None:
    for run_id, events in runs.items():
        verdict.runs += 1
        # A run cut by `since` is checked from its first exported event, whose link is taken as given.
        found = audit.walk(events) if events[0]["prev_hash"] == audit.GENESIS else _walk_from(events)
        verdict.events += found.checked
        if found.problem:
            verdict.problems.append(f"run {run_id}: {found.problem}")


def _walk_from(events: Sequence[Mapping[str, Any]]) -> audit.ChainResult:
    """`audit.walk` from a first event whose predecessor is not in the export."""
    prev = events[0]["prev_hash"]
    for i, e in enumerate(events):
        if e["prev_hash"] != prev:
            return audit.ChainResult(i, prev, f"event {e['id']}: chain broken (prev_hash does not link)", e["id"])
        if audit.event_hash(prev, e) != e["hash"]:
            return audit.ChainResult(i, prev, f"event {e['id']}: altered (its content does not match its hash)")
        prev = e["hash"]
    return audit.ChainResult(len(events), prev)


def chains(checkpoints: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """The checkpoints by workspace (one chain each; "" the legacy chain, and an export older than the
    chains per workspace), each in file order."""
    found: dict[str, list[Mapping[str, Any]]] = {}
    for c in checkpoints:
        found.setdefault(c.get("workspace") or "", []).append(c)
    return found


def label(c: Mapping[str, Any]) -> str:
    """`checkpoint 3 of acme`, or `checkpoint 3` in the legacy chain (as `manage.py verify_audit` names them)."""
    return f"checkpoint {c['seq']} of {c['workspace']}" if c.get("workspace") else f"checkpoint {c['seq']}"


def check_checkpoints(checkpoints: Sequence[Mapping[str, Any]], key: Any, verdict: Verdict) -> None:
    for chain in chains(checkpoints).values():
        check_chain(chain, key, verdict)


def check_chain(chain: Sequence[Mapping[str, Any]], key: Any, verdict: Verdict) -> None:
    from cryptography.exceptions import InvalidSignature

    previous: Mapping[str, Any] | None = None
    for c in chain:
        verdict.checkpoints += 1
        workspace = c.get("workspace") or ""
        text = audit.signed_text(workspace=workspace, seq=c["seq"], at=c["at"], previous=c["previous"], root=c["root"])
        try:
            key.verify(base64.b64decode(c["signature"]), text)
        except (InvalidSignature, ValueError):
            verdict.problems.append(f"{label(c)}: its signature does not verify")
        if previous is not None and c["seq"] != previous["seq"] + 1:
            verdict.problems.append(f"{label({**c, 'seq': previous['seq'] + 1})}: missing (a gap in seq)")
        elif previous is not None and c["previous"] != previous["root"]:
            verdict.problems.append(f"{label(c)}: its previous root is not checkpoint {previous['seq']}'s")
        elif previous is None and c["seq"] == 1 and c["previous"] != audit.GENESIS:
            verdict.problems.append(f"{label(c)}: its previous root is not 64 zeros")
        if c.get("complete") and audit.checkpoint_root(c["previous"], c["runs"]) != c["root"]:
            verdict.problems.append(f"{label(c)}: its root does not match its lines")
        previous = c


def check_lines(runs: Mapping[str, list[dict[str, Any]]], checkpoints: Sequence[Mapping[str, Any]], v: Verdict) -> None:
    for c in checkpoints:
        for run_id, head, count in c["runs"]:
            events = runs.get(run_id)
            if not events or events[0]["prev_hash"] != audit.GENESIS:
                continue  # not exported whole: nothing to hold the line to
            v.lines_checked += 1
            if len(events) < count:
                v.problems.append(f"run {run_id}: {label(c)} sealed {count} events, the export has {len(events)}")
            elif events[count - 1]["hash"] != head:
                v.problems.append(f"run {run_id}: {label(c)} sealed another head at event {count}")


def verify(lines: Iterable[str], public_key: str) -> Verdict:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key))
    runs, checkpoints = read_export(lines)
    verdict = Verdict()
    check_runs(runs, verdict)
    check_checkpoints(checkpoints, key, verdict)
    check_lines(runs, checkpoints, verdict)
    return verdict


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="suspensions-verify", description=__doc__.split("\n")[0])
    parser.add_argument("file", help="an export of GET /api/v1/audit/export (JSON Lines); - for stdin")
    parser.add_argument("--public-key", required=True, help="base64 (GET /api/v1/audit/public-key, kept earlier)")
    args = parser.parse_args(argv)
    try:
        stream = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")  # noqa: SIM115
        with stream:
            verdict = verify(stream, args.public_key)
    except ImportError:
        print('suspensions-verify needs cryptography: pip install "suspensions-client[verify]"', file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError) as exc:
        print(f"cannot read the export or the key: {exc}", file=sys.stderr)
        return 2
    print(
        f"checked {verdict.events} events in {verdict.runs} runs, {verdict.checkpoints} checkpoints "
        f"and {verdict.lines_checked} checkpoint lines"
    )
    for problem in verdict.problems:
        print(problem)
    print("export NOT intact" if verdict.problems else "export intact")
    return 1 if verdict.problems else 0


if __name__ == "__main__":
    sys.exit(main())
