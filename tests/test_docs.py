"""docs/architecture.md: every citation of it names a real section, every path it names exists.

The code cites the architecture by section (``docs/architecture.md §4.2``); a
renumbered section, a renamed page or a moved module must fail here, not leave a stale
pointer. The page holds the one module map of the package.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
OLD_NAME = "docs/" + "ARCHITECTURE.md"  # the page's name until issue 19 (split: not a citation)
SOURCES = ("handoff_fsm", "tests", "benchmarks", "tools", "docs", ".ci")
SKIPPED_DIRS = {"node_modules", "target", "__pycache__", ".venv"}
TEXT_SUFFIXES = {".py", ".rs", ".md", ".toml", ".sh", ".mjs", ""}

# Either name, so a stale citation is reported once, by its name, not also as a missing one.
_CITATION = re.compile(r"(?:architecture|ARCHITECTURE)\.md[^\n§]{0,3}((?:§[\d.]*\d(?:/)?)+)")
_HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", re.MULTILINE)


def _text_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "Makefile", ROOT / "pyproject.toml"]
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*")):
            if (
                SKIPPED_DIRS.isdisjoint(path.parts)
                and path.is_file()
                and path.suffix in TEXT_SUFFIXES
                and path != Path(__file__).resolve()
            ):
                files.append(path)
    return files


def _sections() -> set[str]:
    return set(_HEADING.findall(ARCHITECTURE.read_text(encoding="utf-8")))


def test_the_sections_are_numbered() -> None:
    sections = _sections()
    assert {"1", "2", "3", "4", "4.1", "4.2", "4.3", "4.4", "5", "6", "6.1", "6.2", "6.3", "7"} <= (
        sections
    )


def test_every_citation_names_an_existing_section() -> None:
    sections = _sections()
    cited: dict[str, set[str]] = {}
    for path in _text_files():
        for match in _CITATION.finditer(path.read_text(encoding="utf-8", errors="replace")):
            for number in re.findall(r"§([\d.]*\d)", match[1]):
                cited.setdefault(number, set()).add(str(path.relative_to(ROOT)))
    assert {"4", "6", "7"} <= set(cited)  # the code does cite it
    missing = {number: files for number, files in cited.items() if number not in sections}
    assert missing == {}


def test_nothing_cites_the_page_by_its_old_name() -> None:
    stale = [
        str(path.relative_to(ROOT))
        for path in _text_files()
        if OLD_NAME in path.read_text(encoding="utf-8", errors="replace")
    ]
    assert stale == []


def test_the_module_map_is_in_one_place() -> None:
    """No other page lists the package's modules: a second map would drift from this one."""
    core = {p.name for p in (ROOT / "handoff_fsm").glob("*.py")} - {"__init__.py", "__main__.py"}
    assert len(core) >= 10
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    maps = {}
    for page in pages:
        named = {
            name for name in core if re.search(rf"(?<![\w/.]){re.escape(name)}", page.read_text())
        }
        if len(named) > 3:
            maps[str(page.relative_to(ROOT))] = sorted(named)
    assert list(maps) == ["docs/architecture.md"], maps
    assert set(maps["docs/architecture.md"]) == core  # and it names every core module


def test_nothing_cites_a_design_file_the_repository_does_not_have() -> None:
    stale = [
        str(path.relative_to(ROOT))
        for path in _text_files()
        if "DESIGN.md" in path.read_text(encoding="utf-8", errors="replace")
    ]
    assert stale == []


def test_every_module_in_the_layout_exists() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    layout = text.split("## 2. Layers and subpackages", 1)[1].split("```", 2)[1]
    names = re.findall(r"([a-z_]+(?:\.py|/))", layout)
    assert "chart.py" in names and "engines/" in names
    package = ROOT / "handoff_fsm"
    listed = {name for name in names if name != "handoff_fsm/"}
    missing = sorted(
        name for name in listed if not any(p.name == name.rstrip("/") for p in package.rglob("*"))
    )
    assert missing == []


def test_every_repository_path_it_names_exists() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    paths = set(
        re.findall(r"`((?:tests|docs|diagrams|benchmarks|tools|handoff_fsm)/[\w./-]+)`", text)
    )
    paths |= {f"handoff_fsm/{p}" for p in re.findall(r"`((?:engines|io|verify)/\w+\.py)`", text)}
    assert "tests/oracle/reference/replay_handoff.rs" in paths
    assert sorted(p for p in paths if not (ROOT / p).exists()) == []
