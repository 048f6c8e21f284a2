"""README's commands: every ``handoff-fsm ...`` it shows is one the CLI accepts.

A renamed option (``simulate --engine`` became ``--backend``) must fail here, not
leave a newcomer with a command that stops on its first word. Each command, in a
code block or inline, is parsed by the CLI's own parser (nothing is run).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from handoff_fsm.cli import build_parser

README = Path(__file__).resolve().parents[1] / "README.md"

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_INLINE = re.compile(r"`(handoff-fsm [^`]+)`")
_PLACEHOLDER = re.compile(r"<[^>]*>|\.\.\.|…")


def _shown_commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    commands = []
    for block in _FENCE.findall(text):
        for raw in block.replace("\\\n", " ").splitlines():
            line = raw.strip().removeprefix("$ ")
            if line.startswith("handoff-fsm "):  # an optional [--flag VALUE] is given
                commands.append(re.sub(r"\[([^\]|]*)\]", r"\1", line))
    outside = _FENCE.sub("", text)
    for span in _INLINE.findall(outside):
        words = span.split()
        # A command, not a mention of one (`handoff-fsm replay --revision`) or its
        # synopsis (`[--coordinator KEY]`): an argument beyond the subcommand's options.
        if "[" not in span and any(not word.startswith("-") for word in words[2:]):
            commands.append(" ".join(words))
    return commands


def _argv(command: str) -> list[str]:
    """The arguments of ``command``, without its comment, pipe or redirection."""
    words = shlex.split(command, comments=True)
    for stop in ("|", ">", "2>", "&&", ";"):
        if stop in words:
            words = words[: words.index(stop)]
    return words[1:]


COMMANDS = [c for c in _shown_commands() if not _PLACEHOLDER.search(c)]


def test_readme_shows_commands() -> None:
    assert len(COMMANDS) >= 15


@pytest.mark.parametrize("command", COMMANDS)
def test_the_cli_accepts_it(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = _argv(command)
    if "--help" in argv or "--version" in argv:
        with pytest.raises(SystemExit) as stop:
            build_parser().parse_args(argv)
        assert stop.value.code == 0
        return
    try:
        build_parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"{command}\n{capsys.readouterr().err}")
