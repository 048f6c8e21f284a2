"""The command line as a user meets it: ``python -m handoff_fsm ARGS`` in a fresh interpreter.

Rule kept here: a test that needs the real process (its exit status, what it prints to a
closed, full or redirected stream, a traceback it must not show, a signal it gets)
starts it from :data:`COMMAND`, and through :func:`run_cli` when it runs it to the end,
so every such test starts the same interpreter the same way. A test that only needs
what a command does calls ``handoff_fsm.cli.main`` in its own process instead: a fresh
interpreter costs its start-up every time.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from typing import Any, Final, Literal, overload

COMMAND: Final = (sys.executable, "-m", "handoff_fsm")
"""``handoff-fsm`` in a fresh interpreter: the one running the tests, with this package."""


@overload
def run_cli(
    *args: str,
    text: Literal[True] = ...,
    python: Sequence[str] = ...,
    **options: Any,
) -> subprocess.CompletedProcess[str]: ...


@overload
def run_cli(
    *args: str, text: Literal[False], python: Sequence[str] = ..., **options: Any
) -> subprocess.CompletedProcess[bytes]: ...


def run_cli(
    *args: str, text: bool = True, python: Sequence[str] = (), **options: Any
) -> subprocess.CompletedProcess[Any]:
    """``handoff-fsm ARGS`` run to its end: its output captured (unless ``options`` name
    where stdout or stderr go), its exit status returned, not checked (unless
    ``check=True``). ``python``: options of the interpreter itself (``-X faulthandler``);
    every other option is :func:`subprocess.run`'s."""
    options.setdefault("check", False)
    if "stdout" not in options and "stderr" not in options:
        options["capture_output"] = True
    command = [COMMAND[0], *python, *COMMAND[1:], *args]
    return subprocess.run(command, text=text, **options)  # noqa: PLW1510 - check is set above
