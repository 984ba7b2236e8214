"""The repository cites its own docs/, never the design document that sits outside it (issue 51, point 4).

A citation names a file and one of its headings, `docs/api.md, "8. Push: webhooks"`, so a reader of the
repository alone can follow it.
"""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Paths still allowed to cite the design document, until their rewrite lands (then this empties).
NOT_YET_CHECKED: tuple[str, ...] = ()

DESIGN_CITATION = re.compile(r"DESIGN(?:\.md)? ?§|DESIGN\ssection")
DOCS_CITATION = re.compile(r'((?:docs/[\w.-]+|clients/python/README)\.md), "([^"\n]+)"')
HEADING = re.compile(r"^#{1,6} +(.+?) *$")
BOLD_LABEL = re.compile(r"^(?:- )?\*\*(.+?)\*\*")


def tracked_texts():
    """Every tracked file outside NOT_YET_CHECKED that reads as UTF-8, as (path, text)."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in names.decode().split("\0"):
        if not name or name.startswith(NOT_YET_CHECKED) or not (ROOT / name).is_file():
            continue
        try:
            yield name, (ROOT / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue


def names(path: Path) -> list[str]:
    """What a citation may name in a markdown file: its headings (outside fenced code), also without their
    number ("7.13 "), and the bold labels that open its paragraphs and list items ("**Names and ids.**")."""
    found, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            found += [match.group(1), re.sub(r"^[\d.]+ ", "", match.group(1))]
        elif not fenced and (match := BOLD_LABEL.match(line)):
            found.append(match.group(1))
    return found


def names_a_part(cited: str, parts: list[str]) -> bool:
    """The citation is a part's name, or the start of it ("A sixth look" of "A sixth look: what ... spends")."""
    return any(part == cited or part.startswith(cited) and not part[len(cited)].isalnum() for part in parts)


def test_no_tracked_file_cites_the_design_document_by_section():
    cited = [
        f"{name}:{number}: {line.strip()}"
        for name, text in tracked_texts()
        for number, line in enumerate(text.splitlines(), 1)
        if DESIGN_CITATION.search(line)
    ]
    assert cited == [], "cite the docs/ section that states the rule instead:\n" + "\n".join(cited)


def test_every_docs_citation_names_a_heading_or_label_of_that_file():
    cache: dict[str, list[str]] = {}
    broken = []
    for name, text in tracked_texts():
        for number, line in enumerate(text.splitlines(), 1):
            for target, heading in DOCS_CITATION.findall(line):
                if target not in cache:
                    cache[target] = names(ROOT / target) if (ROOT / target).is_file() else []
                if not names_a_part(heading, cache[target]):
                    broken.append(f'{name}:{number}: {target}, "{heading}"')
    assert broken == [], "no such heading:\n" + "\n".join(broken)


def test_the_checks_above_see_the_citations_they_look_for():
    """The scan reads the tree: this module's own citation and the code's are found, and the pattern matches."""
    names = {name for name, _ in tracked_texts()}
    assert "suspensions/services/outbox.py" in names and "docs/api.md" in names
    assert DESIGN_CITATION.search("see DESIGN " + "§14") and DESIGN_CITATION.search("DESIGN.md " + "§3")
    assert DOCS_CITATION.findall('(docs/api.md, "8. Push: webhooks")') == [("docs/api.md", "8. Push: webhooks")]
