"""The ``handoff-fsm`` command line: thin argument parsing over the library.

Rule kept here: no behaviour of its own. Each subcommand's module
(``cli/<command>.py``) declares its parser beside its runner, a
``cli_<command>(args) -> int`` function (``register(commands)`` sets it as the
parser's ``run``), with the options every subcommand shares taken from
:mod:`~handoff_fsm.cli.common`; a module imports the library's upper rooms only when
its command runs, so ``handoff-fsm --help`` starts fast. :func:`main` is the one place
where the environment's refusals (a missing, unreadable or unwritable file, a
directory where a file was meant, a full disk, a closed standard stream, a
closed pipe, Ctrl-C) and a misnamed output (:class:`~handoff_fsm.cli.files.UsageError`)
become a one-line ``handoff-fsm <command>: ...`` message instead of a traceback;
standard output's write errors name it ``<stdout>``, as a file's name the file.
Exit statuses: 0 ok, 1 the checked thing failed, 2 usage or environment error
(a missing tool such as Graphviz too, even when part of the output was written),
130 on Ctrl-C.

Words mean one thing across subcommands: ``--engine`` is how a coordinator runs
(``compiled`` table or the ``statechart`` interpreter); ``--backend`` is the
serving engine a simulation fakes (vLLM, SGLang, TRT-LLM).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, NoReturn, TextIO, cast

from handoff_fsm.cli import (
    check,
    diagrams,
    diff,
    export,
    inspect,
    lifecycle,
    replay,
    simulate,
    sweep,
)
from handoff_fsm.cli.common import fail
from handoff_fsm.cli.files import STDOUT_NAME, UsageError, named_errors

COMMANDS: Final = (replay, diagrams, export, check, simulate, sweep, diff, lifecycle, inspect)
"""The modules of this package that declare subcommands, in the order ``--help`` lists them
(``diagrams`` declares ``diagrams``, ``diagram`` and ``review``)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="handoff-fsm",
        description="The prefill-to-decode KV-cache handoff as a statechart: trace replay, "
        "diagrams and design review, exhaustive checking, and simulation.",
    )
    parser.add_argument(
        "--version",
        action=_VersionAction,
        help="print the version and exit",
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help="one of:"
    )
    for command in COMMANDS:
        command.register(commands)
    for sub in commands.choices.values():
        sub.set_defaults(parser=sub)  # its own usage for its own mistakes (main)
    return parser


class _VersionAction(argparse.Action):
    """``--version``: the installed distribution's version, looked up only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> NoReturn:
        print(f"handoff-fsm {version()}")
        parser.exit()


def version() -> str:
    """The installed package's version, else the source tree's ``handoff_fsm.__version__``."""
    from importlib import metadata

    try:
        return metadata.version("handoff-fsm")
    except metadata.PackageNotFoundError:
        from handoff_fsm import __version__

        return __version__


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the environment's refusals become one line on stderr, not a traceback."""
    parser = build_parser()
    given = list(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(given)
    args.argv = given  # what was said, for a command that hands it on (check SIDE)
    command: str = args.command
    if extra:  # said with the subcommand's usage, not the top level's
        args.parser.error(f"unrecognized arguments: {' '.join(extra)}")
    _replace_closed_std_streams()
    run: Callable[[argparse.Namespace], int] = args.run
    stdout = sys.stdout
    sys.stdout = cast(TextIO, _NamedStdout(stdout))
    try:
        return _run(run, args, command)
    finally:
        sys.stdout = stdout


def _run(run: Callable[[argparse.Namespace], int], args: argparse.Namespace, command: str) -> int:
    try:
        status = run(args)
        sys.stdout.flush()  # a full disk or a closed pipe on stdout is reported here, not at exit
    except UsageError as error:
        _settle_stdout()
        return fail(command, str(error))
    except BrokenPipeError:  # the reader went away (`| head`): the verdict stands, if any
        _settle_stdout()
        recorded: int = getattr(args, "verdict", 0)
        return recorded
    except KeyboardInterrupt:
        _settle_stdout()
        return 130
    except OSError as error:
        _settle_stdout()
        return fail(command, _os_error_text(error))
    except UnicodeError as error:  # text that the output's encoding cannot hold
        _settle_stdout()
        return fail(command, str(error))
    return status


def _os_error_text(error: OSError) -> str:
    """``FILE: reason``, as Unix tools say it (``reason`` alone when no file is known)."""
    reason = error.strerror or str(error)
    if error.filename is None:
        return reason
    return f"{error.filename!s}: {reason}"


class _NamedStdout:
    """Standard output whose write errors name it (``<stdout>``), as a file's errors do.

    Python's ``OSError`` from a full or failing standard output names nothing; every
    command's printing goes through ``sys.stdout``, so this is the one place that
    names it. Anything else is the stream's own.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        with named_errors(STDOUT_NAME):
            return self._stream.write(text)

    def flush(self) -> None:
        with named_errors(STDOUT_NAME):
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _ClosedStream:
    """Stands in for a standard stream that was closed when the process started.

    Python leaves such a stream ``None``; using it would then raise
    ``AttributeError`` from deep inside a command. This raises the ``OSError``
    that ``main`` reports (``<stdin>: closed ...``).
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def _closed(self) -> NoReturn:
        raise OSError(errno.EBADF, "closed (the command was started without it)", self.name)

    @property
    def buffer(self) -> NoReturn:
        self._closed()

    def write(self, text: str) -> NoReturn:
        self._closed()

    def read(self, size: int = -1) -> NoReturn:
        self._closed()

    def readline(self, size: int = -1) -> NoReturn:
        self._closed()

    def flush(self) -> None:
        """Nothing was written, so nothing is lost."""

    def isatty(self) -> bool:
        return False

    def fileno(self) -> NoReturn:
        self._closed()


def _replace_closed_std_streams() -> None:
    if sys.stderr is None:  # nowhere to complain: complaints are dropped, the status remains
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    if sys.stdin is None:
        sys.stdin = _ClosedStream("<stdin>")
    if sys.stdout is None:
        sys.stdout = _ClosedStream("<stdout>")


def _settle_stdout() -> None:
    """Deliver what stdout holds; if it cannot take it, discard it.

    Otherwise the interpreter's final flush would fail a second time and print
    its own traceback-like complaint after our message.
    """
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    else:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (closed, or captured)
        pass
