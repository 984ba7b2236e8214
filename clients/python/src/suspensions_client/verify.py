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
  export holds that run whole: the event at `event_count` has `head_hash`;
- a run whose first events were pruned (a `pruned` line: count, head, and the
  checkpoint that seals it): the checkpoint in the export seals the line
  `run_id head count`, and the kept events chain from `head`; lines sealed
  after the prefix are held to the kept events (docs/auditors.md, "Verifying
  a pruned trail").

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
    pruned: int = 0
    problems: list[str] = field(default_factory=list)


Export = tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]], dict[str, dict[str, Any]]]


def read_export(lines: Iterable[str]) -> Export:
    """The export's events grouped by run (in file order), its checkpoints and its pruned prefixes by run."""
    runs: dict[str, list[dict[str, Any]]] = {}
    checkpoints: list[dict[str, Any]] = []
    pruned: dict[str, dict[str, Any]] = {}
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        line = json.loads(text)
        if line.get("type") == "event":
            runs.setdefault(line["run_id"], []).append(line)
        elif line.get("type") == "checkpoint":
            checkpoints.append(line)
        elif line.get("type") == "pruned":
            pruned[line["run_id"]] = line
        else:
            raise ValueError(f"line {number}: unknown type {line.get('type')!r}")
    return runs, checkpoints, pruned


def start_of(events: Sequence[Mapping[str, Any]], prefix: Mapping[str, Any] | None) -> tuple[str, int] | None:
    """Where an exported run's chain starts: (64 zeros, 0) exported whole, (head, count) right after its sealed
    pruned prefix; None when cut by `since` (its first link is then taken as given)."""
    first = events[0]["prev_hash"]
    if first == audit.GENESIS:
        return audit.GENESIS, 0
    if prefix is not None and first == prefix["head"]:
        return prefix["head"], int(prefix["count"])
    return None


def check_runs(
    runs: Mapping[str, list[dict[str, Any]]], verdict: Verdict, pruned: Mapping[str, Mapping[str, Any]] | None = None
) -> None:
    for run_id, events in runs.items():
        verdict.runs += 1
        start = start_of(events, (pruned or {}).get(run_id))
        # A run cut by `since` is checked from its first exported event, whose link is taken as given.
        found = _walk_from(events) if start is None else audit.walk(events, start[0])
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


def check_lines(
    runs: Mapping[str, list[dict[str, Any]]],
    checkpoints: Sequence[Mapping[str, Any]],
    v: Verdict,
    pruned: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    for c in checkpoints:
        for run_id, head, count in c["runs"]:
            events = runs.get(run_id)
            start = start_of(events, (pruned or {}).get(run_id)) if events else None
            if not events or start is None or count <= start[1]:
                continue  # not exported whole (or sealed inside the pruned prefix): nothing to hold the line to
            v.lines_checked += 1
            offset = start[1]
            if offset + len(events) < count:
                v.problems.append(
                    f"run {run_id}: {label(c)} sealed {count} events, the export has {offset + len(events)}"
                )
            elif events[count - offset - 1]["hash"] != head:
                v.problems.append(f"run {run_id}: {label(c)} sealed another head at event {count}")


def check_pruned(pruned: Mapping[str, Mapping[str, Any]], checkpoints: Sequence[Mapping[str, Any]], v: Verdict) -> None:
    """Each pruned prefix is sealed by its checkpoint in the export (whose signature check_chain verifies)."""
    sealed = {((c.get("workspace") or ""), int(c["seq"])): c for c in checkpoints}
    for run_id, p in pruned.items():
        v.pruned += 1
        name = label({"workspace": p["workspace"], "seq": p["seq"]})
        seal = sealed.get((p["workspace"], int(p["seq"])))
        if seal is None or [run_id, p["head"], int(p["count"])] not in [list(line) for line in seal["runs"]]:
            v.problems.append(f"run {run_id}: pruned before event {p['count'] + 1}, but {name} does not seal that")


def verify(lines: Iterable[str], public_key: str) -> Verdict:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key))
    runs, checkpoints, pruned = read_export(lines)
    verdict = Verdict()
    check_runs(runs, verdict, pruned)
    check_checkpoints(checkpoints, key, verdict)
    check_lines(runs, checkpoints, verdict, pruned)
    check_pruned(pruned, checkpoints, verdict)
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
        + (f"; {verdict.pruned} runs verified from a sealed pruned prefix" if verdict.pruned else "")
    )
    for problem in verdict.problems:
        print(problem)
    print("export NOT intact" if verdict.problems else "export intact")
    return 1 if verdict.problems else 0


if __name__ == "__main__":
    sys.exit(main())
