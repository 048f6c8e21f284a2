"""The ``handoff-fsm`` command line: thin argument parsing over the library.

Rule kept here: no behaviour of its own. Each subcommand's module
(``cli/<command>.py``) declares its parser beside its runner, a
``cli_<command>(args) -> int`` function (``register(commands)`` sets it as the
parser's ``run``), with the options every subcommand shares taken from
:mod:`~handoff_fsm.cli.common`; a module imports the library's upper rooms only when
its command runs, so ``handoff-fsm --help`` starts fast. :func:`main` is the one place
where the environment's refusals (a missing, unreadable or unwritable file, a
directory where a file was meant, a full disk, a closed standard stream, Ctrl-C)
and a misnamed output (:class:`~handoff_fsm.cli.files.UsageError`)
become a one-line ``handoff-fsm <command>: ...`` message instead of a traceback;
standard output's write errors name it ``<stdout>``, as a file's name the file.
Exit statuses: 0 ok, 1 the checked thing failed, 2 usage or environment error
(a missing tool such as Graphviz too, even when part of the output was written),
130 on Ctrl-C.

The exit status is the command's verdict, whoever reads its output: a reader that goes
away early (``| head -1``, ``| true``) changes nothing but what is printed. Why: a
status that depends on the reader flips a CI gate (``set -o pipefail``), hiding a
usage error or turning a failing check into success. So :func:`main` puts
:class:`_StandardStream` in front of standard output and standard error, for every
command and for argparse's own messages (``--help``, a usage error): once a stream's
reader is gone (``EPIPE``), whatever is written to it is dropped (the stream is pointed
at the null device, so the interpreter's last flush cannot fail either) and the command
runs on to its end, writing its files and deciding its status as it would have. No
command stops early for a closed pipe, so no command needs to know about one.

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
from handoff_fsm.cli.files import STDERR_NAME, STDOUT_NAME, UsageError, named_errors

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
    _replace_closed_std_streams()
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, _StandardStream(stdout, STDOUT_NAME))
    sys.stderr = cast(TextIO, _StandardStream(stderr, STDERR_NAME))
    try:
        return _main(argv)
    finally:  # also for argparse's exits (--help, a usage error): their text goes out here
        for wrapper in (sys.stdout, sys.stderr):
            if isinstance(wrapper, _StandardStream):
                wrapper.settle()
        sys.stdout, sys.stderr = stdout, stderr


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    given = list(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(given)
    args.argv = given  # what was said, for a command that hands it on (check SIDE)
    command: str = args.command
    if extra:  # said with the subcommand's usage, not the top level's
        args.parser.error(f"unrecognized arguments: {' '.join(extra)}")
    run: Callable[[argparse.Namespace], int] = args.run
    return _run(run, args, command)


def _run(run: Callable[[argparse.Namespace], int], args: argparse.Namespace, command: str) -> int:
    try:
        status = run(args)
        sys.stdout.flush()  # a full disk on stdout is reported here, not at exit
    except UsageError as error:
        _settle_stdout()
        return fail(command, str(error))
    except KeyboardInterrupt:
        _settle_stdout()
        return 130
    except OSError as error:  # a broken pipe too, unless it is a standard stream's reader
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


class _StandardStream:
    """Standard output or error as every command writes it (see the module's rule).

    Write errors name the stream (``<stdout>``), as a file's errors name the file:
    Python's ``OSError`` from a full or failing standard stream names nothing, and every
    command prints through ``sys.stdout`` and ``sys.stderr``, so this is the one place
    that names them. A reader that went away (``BrokenPipeError``) is no error: the
    stream is pointed at the null device and the rest is dropped. Standard error drops
    every other write error too: there is nowhere left to complain, and the status is
    what tells. Anything else is the stream's own.
    """

    def __init__(self, stream: TextIO, name: str) -> None:
        self._stream = stream
        self._name = name
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                with named_errors(self._name):
                    return self._stream.write(text)
            except OSError as error:
                self._refused(error)
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                with named_errors(self._name):
                    self._stream.flush()
            except OSError as error:
                self._refused(error)

    def settle(self) -> None:
        """Deliver what is held (a command's last words, argparse's help), as
        :meth:`flush`; a failure left for the interpreter's exit would print its own
        complaint and change the exit status."""
        try:
            self.flush()
        except OSError:
            _drop(self._stream)

    def _refused(self, error: OSError) -> None:
        if not isinstance(error, BrokenPipeError) and self._name != STDERR_NAME:
            raise error
        self._gone = True
        _drop(self._stream)

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
        _drop(sys.stdout)


def _drop(stream: TextIO) -> None:
    """Point ``stream``'s file at the null device, so what it holds and what comes next go
    nowhere instead of failing (a stream that is no file, or is closed, is left alone)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (closed, or captured)
        pass
