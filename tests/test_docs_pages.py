"""Every code block of README.md and the docs pages is run or parsed, by its language.

- ``python``: executed, alone, in a fresh namespace from the repository root; a synopsis
  (it uses names it does not define, or awaits at top level) is listed in ``SYNOPSES``
  and only compiled.
- ``sh``: each command names something real: a ``make`` target of the Makefile, an extra
  of ``pyproject.toml``, a script or module of the repository. (``handoff-fsm`` commands
  are parsed by the CLI's parser in tests/test_readme_commands.py.)
- ``console``: the ``$`` line is run, from the repository root, and its output must be
  what the page shows (``...`` stands for any text; a line of only ``...`` for any lines).
- ``js``: run by node from the repository root, with the npm packages of
  tools/mermaid-check (xstate) on its module path; it must exit 0 and print nothing to
  stderr (its own ``assert`` calls say what it shows).
- ``json``: every line is a JSON object; the replay example is the committed trace.
- ``text``: the module map (tests/test_docs.py checks it) and the replay schema of the
  architecture (its placeholders filled in, it is a valid trace).

Any other language fails: a block nobody checks would go stale unnoticed.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from handoff_fsm.cli import build_parser, main
from handoff_fsm.io import replay
from tests.requirements import MERMAID_CHECK

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = [README, *sorted(p for p in DOCS.rglob("*.md") if "figures" not in p.parts)]
LANGUAGES = {"python", "sh", "console", "js", "json", "text"}

_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    page: Path
    language: str
    text: str

    def __str__(self) -> str:
        first = self.text.splitlines()[0] if self.text else ""
        return f"{self.page.relative_to(ROOT)}: {self.language}: {first[:60]}"


def blocks(page: Path) -> list[Block]:
    return [
        Block(page, language.strip(), text)
        for language, text in _FENCE.findall(page.read_text(encoding="utf-8"))
    ]


ALL = [block for page in PAGES for block in blocks(page)]


def of(language: str) -> list[Block]:
    return [block for block in ALL if block.language == language]


def _id(block: Block) -> str:
    return str(block)


# (page, first line) of each python block that is a synopsis: compiled, not run.
SYNOPSES = {
    ("docs/driving.md", "from handoff_fsm.aio import HandoffSession"),
    (
        "docs/architecture.md",
        "# SourceHeld in (submitted, destination idle, transfer idle), order SourceFirst",
    ),
}


def _key(block: Block) -> tuple[str, str]:
    return (str(block.page.relative_to(ROOT)), block.text.splitlines()[0])


def test_every_block_has_a_checked_language() -> None:
    assert len(ALL) >= 25
    assert sorted({str(b) for b in ALL if b.language not in LANGUAGES}) == []


def test_the_pages_are_the_ones_the_site_builds() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in PAGES[1:]:
        assert f" {page.relative_to(DOCS).as_posix()}\n" in nav, page


# ---------------------------------------------------------------------------- python


@pytest.mark.slow
@pytest.mark.parametrize("block", of("python"), ids=_id)
def test_python_runs(block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    code = compile(
        block.text, str(block.page), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )
    if _key(block) in SYNOPSES:
        return
    monkeypatch.chdir(ROOT)
    exec(code, {"__name__": "docs_block"})


def test_every_synopsis_is_on_a_page() -> None:
    assert {_key(b) for b in of("python")} >= SYNOPSES


def test_the_quick_start_snippet_gets_the_reference_s_delay() -> None:
    (snippet,) = [b for b in blocks(README) if b.language == "python"]
    namespace: dict[str, Any] = {}
    exec(snippet.text, namespace)
    assert namespace["transfer"].action.delay_ms == 21.47483648
    assert "# 21.47483648 (bit-identical to the reference)" in snippet.text


# ---------------------------------------------------------------------------- js


@pytest.mark.requires("node")
@pytest.mark.parametrize("block", of("js"), ids=_id)
def test_js_runs(block: Block, tmp_path: Path) -> None:
    script = tmp_path / "block.cjs"
    script.write_text(block.text, encoding="utf-8")
    result = subprocess.run(
        ["node", str(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "NODE_PATH": str(MERMAID_CHECK / "node_modules")},
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_the_pages_run_javascript() -> None:
    assert [b.page.name for b in of("js")] == ["elsewhere.md"]


# ---------------------------------------------------------------------------- sh


def _commands(text: str) -> list[list[str]]:
    commands = []
    for line in text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append(words)
    return commands


def _makefile_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][\w-]*):", makefile, re.MULTILINE))


def _extras() -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(pyproject["project"]["optional-dependencies"])


def check_command(words: list[str]) -> None:
    """``words`` (one shell command) names only things that exist."""
    program, args = words[0], words[1:]
    if program == "handoff-fsm":
        return  # tests/test_readme_commands.py parses it
    if program == "make":
        assert set(args) <= _makefile_targets(), words
    elif program == "pip":
        assert args[0] == "install", words
        for spec in args[1:]:
            match = re.fullmatch(r"\.(?:\[([\w,]+)\])?", spec)
            assert match, words
            assert set((match[1] or "").split(",")) - {""} <= _extras(), words
    elif program in {"python", ".venv/bin/python"}:
        if args[0] == "-m":
            module = ROOT / Path(*args[1].split("."))
            assert module.with_suffix(".py").is_file() or (module / "__main__.py").is_file()
        else:
            assert (ROOT / args[0]).is_file(), words
    elif program == "cat":
        assert all(list(ROOT.glob(pattern)) for pattern in args), words
    else:
        pytest.fail(f"a command the docs tests do not know: {words}")


@pytest.mark.parametrize("block", of("sh"), ids=_id)
def test_sh_names_what_exists(block: Block) -> None:
    commands = _commands(block.text)
    assert commands
    for words in commands:
        check_command(words)


# ---------------------------------------------------------------------------- console


def _shown(text: str) -> tuple[str, str]:
    command, _, output = text.partition("\n")
    assert command.startswith("$ "), command
    return command.removeprefix("$ "), output


def _pattern(output: str) -> re.Pattern[str]:
    parts = []
    for line in output.splitlines(keepends=True):
        if line.strip() == "...":
            parts.append(r"(?:.*\n)*?")
        else:
            parts.append(".*".join(re.escape(piece) for piece in line.split("...")))
    return re.compile("".join(parts))


def test_the_ellipsis_matches_what_it_stands_for() -> None:
    pattern = _pattern("a: 1, ...\n  ...\nz\n")
    assert pattern.fullmatch("a: 1, 0.5 s\n  b\n  c\nz\n")
    assert pattern.fullmatch("a: 1, 0.5 s\nz\n")
    assert not pattern.fullmatch("a: 2, 0.5 s\nz\n")
    assert not pattern.fullmatch("a: 1, 0.5 s\nz\nmore\n")


@pytest.mark.slow
@pytest.mark.parametrize("block", of("console"), ids=_id)
def test_console_shows_what_the_command_prints(block: Block) -> None:
    command, output = _shown(block.text)
    for part in re.split(r"\s*\|\s*", command):
        check_command(shlex.split(part))
    bin_dir = str(Path(sys.executable).parent)  # handoff-fsm and python of this venv
    result = subprocess.run(
        ["sh", "-c", command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"]},
    )
    assert "Traceback" not in result.stderr, result.stderr
    assert _pattern(output).fullmatch(result.stdout), result.stdout


def test_the_replay_example_is_the_committed_trace_and_its_replies() -> None:
    page = DOCS / "replay.md"
    (trace,) = [b for b in blocks(page) if b.language == "json"]
    example = DOCS / "examples" / "trace.jsonl"
    assert trace.text == example.read_text(encoding="utf-8")
    (shown,) = [b for b in blocks(page) if b.language == "console"]
    command, output = _shown(shown.text)
    assert command == "handoff-fsm replay docs/examples/trace.jsonl"
    assert "..." not in output  # every reply, in full
    replies = list(replay(example.read_text(encoding="utf-8").splitlines()))
    assert output == "".join(f"{reply}\n" for reply in replies)
    codes = [json.loads(reply).get("error", {}).get("code") for reply in replies]
    assert codes == [None, None, "source_held_before_submit", None, None]


# ---------------------------------------------------------------------------- json, text


@pytest.mark.parametrize("block", of("json"), ids=_id)
def test_json_lines_are_objects(block: Block) -> None:
    for line in block.text.splitlines():
        assert isinstance(json.loads(line), dict), line


HID = "00000000-0000-4000-8000-000000000001"
FILLED = {
    '"<uuid>"': json.dumps(HID),
    "<fact>": json.dumps({"Failed": {"handoff_id": HID}}),
    "<outcome>": '"Submitted"',
}


def test_the_text_blocks_are_the_module_map_and_the_replay_schema() -> None:
    texts = of("text")
    assert [b.page.name for b in texts] == ["architecture.md", "architecture.md"]
    module_map, schema = texts
    assert module_map.text.startswith("handoff_fsm/ ")  # tests/test_docs.py reads it
    lines = schema.text.splitlines()
    for placeholder, value in FILLED.items():
        lines = [line.replace(placeholder, value) for line in lines]
    replies = [json.loads(reply) for reply in replay(lines)]
    assert [r.get("error", {}).get("code") for r in replies] == [None, None, None, "unknown_action"]


# ---------------------------------------------------------------------------- figures


@pytest.mark.slow
def test_the_decode_cancel_figures_are_what_simulate_reports(
    capsys: pytest.CaptureFixture[str],
) -> None:
    page = (DOCS / "simulation.md").read_text(encoding="utf-8")
    (commands,) = [b for b in blocks(DOCS / "simulation.md") if "--decode-cancel-rate" in b.text]
    rows = {}
    for words in _commands(commands.text):
        assert main(words[1:]) == 0
        run = json.loads(capsys.readouterr().out)
        rows[run["revision"]] = (
            f"| `{run['revision']}` | {run['faults']['decode_canceled']} | {run['canceled']} "
            f"| {run['reopened']} | {round(run['destination_held_after_cancel_ms'], 3)} "
            f"| {run['leaked']} |"
        )
    assert set(rows) == {"seed", "a976b2bf"}
    for row in rows.values():
        assert row in page, row


def test_the_example_run_s_phase_figures_are_its_summary_s() -> None:
    page = (DOCS / "simulation.md").read_text(encoding="utf-8")
    summary = (DOCS / "figures" / "summary.md").read_text(encoding="utf-8")
    phases = summary.split("## Where the time goes", 1)[1].split("\n## ", 1)[0]
    (success,) = [line for line in phases.splitlines() if line.startswith("| Success |")]
    cells = [cell.strip() for cell in success.strip("|").split("|")]
    total, submit_to_held = cells[-1], cells[2]
    assert f"takes {total} virtual ms on average, {submit_to_held} of them" in " ".join(
        page.split()
    )


# ---------------------------------------------------------------------------- README


def _subcommands() -> set[str]:
    (action,) = [a for a in build_parser()._actions if a.choices and a.dest == "command"]
    assert isinstance(action.choices, dict)
    return set(action.choices)


@pytest.mark.parametrize("page", [README, DOCS / "index.md"], ids=lambda p: p.name)
def test_the_command_table_lists_every_subcommand(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    table = text.split("| command | what it does | guide |", 1)[1].split("\n\n", 1)[0]
    listed = set(re.findall(r"^\| `([a-z]+)", table, re.MULTILINE))
    assert listed == _subcommands()


def test_the_readme_is_short_and_its_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    for make in ("make diagrams", "make test"):
        assert f"\n{make} " in text
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert "docs/architecture.md" in local
    assert sorted(link for link in local if not (ROOT / link).exists()) == []
