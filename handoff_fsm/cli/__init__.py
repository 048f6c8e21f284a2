"""The ``handoff-fsm`` command line: thin argument parsing over the library.

Rule kept here: no behaviour of its own. This module only declares the
subcommands and their arguments; each runs a ``cli_<command>(args) -> int``
function in a module of this package (``cli/<command>.py``), imported only
when used, so ``handoff-fsm --help`` starts fast. :func:`main` is the one place
where the environment's refusals (a missing, unreadable or unwritable file, a
directory where a file was meant, a full disk, a closed standard stream, a
closed pipe, Ctrl-C) become a one-line ``handoff-fsm <command>: ...`` message
instead of a traceback. Exit statuses: 0 ok, 1 the checked thing failed, 2
usage or environment error (130 on Ctrl-C).

Words mean one thing across subcommands: ``--engine`` is how a coordinator runs
(``compiled`` table or the ``statechart`` interpreter); ``--backend`` is the
serving engine a simulation fakes (vLLM, SGLang, TRT-LLM).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn, cast

from handoff_fsm.errors import quoted

_RUNNERS: dict[str, str] = {
    "replay": "handoff_fsm.cli.replay:cli_replay",
    "diagrams": "handoff_fsm.cli.diagrams:cli_diagrams",
    "diagram": "handoff_fsm.cli.diagrams:cli_diagram",
    "review": "handoff_fsm.cli.diagrams:cli_review",
    "check": "handoff_fsm.cli.check:cli_check",
    "simulate": "handoff_fsm.cli.simulate:cli_simulate",
    "diff": "handoff_fsm.cli.diff:cli_diff",
    "lifecycle": "handoff_fsm.cli.lifecycle:cli_lifecycle",
}

_REVISIONS = ("seed", "a976b2bf")
"""Protocol revisions (``handoff_fsm.Revision``; the package is not imported for --help)."""

_ENGINES = ("compiled", "statechart")
_ENGINE_HELP = "how coordinators run: the compiled table (default) or the statechart interpreter"
_DEFAULT_MAX_LINE_BYTES = 1 << 20
"""``handoff_fsm.io.lines.DEFAULT_MAX_LINE_BYTES`` (not imported: ``--help`` stays light)."""


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

    replay = commands.add_parser(
        "replay",
        help="replay a JSONL trace through coordinators; one JSON reply per line",
        description="Replay TRACE (JSON lines, '-' for stdin) and write one JSON reply per "
        "input line, in order (format: README, 'Trace replay').",
    )
    replay.add_argument("trace", metavar="TRACE", help="trace file (JSON lines), or - for stdin")
    replay.add_argument(
        "-o",
        "--output",
        default="-",
        metavar="OUT",
        help="where to write the replies (default: - for stdout)",
    )
    replay.add_argument("--engine", choices=_ENGINES, default="compiled", help=_ENGINE_HELP)
    replay.add_argument(
        "--revision",
        choices=_REVISIONS,
        default="seed",
        help="protocol revision of 'new' lines that name none (default: seed; a line's own "
        '"revision" wins)',
    )
    replay.add_argument(
        "--remember",
        default="10000",
        metavar="N",
        type=_remember,
        help="how many completed coordinators keep answering late lines exactly as the "
        "coordinator would (default 10000); older ones are kept by key and completion only "
        "(a second 'new' is duplicate_coordinator, any other line forgotten_coordinator); "
        "'all' keeps every one in full",
    )
    replay.add_argument(
        "--max-line-bytes",
        default=_DEFAULT_MAX_LINE_BYTES,
        metavar="B",
        type=_positive,
        help="longest line read, in bytes without the newline (default 1048576 = 1 MiB); "
        "a longer line is skipped in bounded memory and answered line_too_long",
    )

    diagrams = commands.add_parser(
        "diagrams",
        help="render the statechart, tables and lifecycle diagrams into OUTDIR",
        description="Write the statechart (DOT, SVG, PNG, Mermaid), transition tables and "
        "lifecycle sequence diagrams into OUTDIR, deterministically; each protocol revision's "
        "own chart, tables and simulated decode-phase cancel go into OUTDIR/<revision>/.",
    )
    diagrams.add_argument(
        "outdir",
        nargs="?",
        default="diagrams",
        metavar="OUTDIR",
        help="directory to write into, created if missing (default: diagrams)",
    )

    diagram = commands.add_parser(
        "diagram",
        help="draw the statechart with one coordinator's path through a trace highlighted",
        description="Replay TRACE and draw the statechart with one coordinator's visited "
        "states and numbered transitions highlighted, and the trace's errors beside it.",
    )
    diagram.add_argument(
        "--trace", required=True, metavar="TRACE", help="trace file (JSON lines), or - for stdin"
    )
    diagram.add_argument(
        "--coordinator",
        metavar="KEY",
        help="which coordinator of the trace to draw (default: the first one)",
    )
    diagram.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="output file: .svg, .png or .dot"
    )
    diagram.add_argument(
        "--revision",
        choices=_REVISIONS,
        default="seed",
        help="protocol revision of 'new' lines that name none, as for replay (default: seed)",
    )

    _add_lifecycle(commands)

    review = commands.add_parser(
        "review",
        help="write the design review report (Markdown) generated from the code",
        description="Write the design review (chart, tables, lifecycles, error codes, "
        "improvements, state space) as one Markdown file.",
    )
    review.add_argument(
        "-o",
        "--output",
        default="diagrams/REVIEW.md",
        metavar="OUT",
        help="Markdown file to write (default: diagrams/REVIEW.md)",
    )
    review.add_argument(
        "--against",
        metavar="git:REV",
        help="add the behavioural diff of the working tree against that git revision",
    )
    review.add_argument(
        "--git",
        action="store_true",
        help="also write the working tree's git commit (and whether it is dirty) into the "
        "review's provenance; the committed review leaves it out (it cannot name its own commit)",
    )

    check = commands.add_parser(
        "check",
        help="explore every reachable coordinator state and check the invariants",
        description="Breadth-first exploration of every reachable coordinator state, "
        "checking every invariant; exit status 1 on any violation.",
    )
    check.add_argument(
        "--order",
        choices=("SourceFirst", "DestinationFirst", "both"),
        default="both",
        help="which handoff order to explore (default: both)",
    )
    check.add_argument(
        "--revision",
        choices=(*_REVISIONS, "both"),
        default="both",
        help="which protocol revision to explore, with the invariants it promises (default: both)",
    )
    check.add_argument("--engine", choices=_ENGINES, default="compiled", help=_ENGINE_HELP)
    check.add_argument(
        "--json", action="store_true", help="print one JSON object (each report names its revision)"
    )

    simulate = commands.add_parser(
        "simulate",
        help="run many handoffs against fake engines in virtual time",
        description="Simulate N interleaved handoffs with fake source/destination/transfer "
        "endpoints, optional fault injection, and print a summary.",
    )
    simulate.add_argument(
        "--backend",
        choices=("vllm", "sglang", "trtllm"),
        default="vllm",
        help="serving engine the fake endpoints behave like: vllm (SourceFirst, default), "
        "sglang (DestinationFirst); trtllm is refused (no destination handoff)",
    )
    simulate.add_argument(
        "--handoffs",
        type=_natural,
        default=1000,
        metavar="N",
        help="how many handoffs to run (default 1000)",
    )
    simulate.add_argument(
        "--concurrency",
        type=_natural,
        default=64,
        metavar="C",
        help="how many handoffs are in flight at once (default 64)",
    )
    simulate.add_argument(
        "--fault-rate",
        type=float,
        default=0.0,
        metavar="P",
        help="probability in [0, 1] of a fault per acknowledgement, transfer and handoff "
        "(default 0)",
    )
    simulate.add_argument(
        "--decode-cancel-rate",
        type=float,
        default=0.0,
        metavar="P",
        help="probability in [0, 1] that a request whose handoff succeeded is canceled while "
        "the destination decodes it (default 0)",
    )
    simulate.add_argument(
        "--revision",
        choices=_REVISIONS,
        default="seed",
        help="protocol revision the coordinators follow (default: seed; a976b2bf cancels "
        "the decoding destination on a late cancel, and runs TRT-LLM SourceFirst)",
    )
    simulate.add_argument(
        "--seed", type=_natural, default=0, metavar="S", help="random seed (default 0)"
    )
    simulate.add_argument(
        "--trace",
        metavar="OUT",
        help="also write every coordinator input to OUT (JSONL, each line with its virtual "
        "time at_ms)",
    )
    simulate.add_argument(
        "--plots",
        metavar="DIR",
        help="also write SVG plots (latency, time per phase, KV holds) and summary.md to DIR "
        "(needs matplotlib: pip install 'handoff-fsm[plots]')",
    )
    simulate.add_argument("--json", action="store_true", help="print the summary as JSON")
    simulate.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (shown on a terminal for long runs, never with --json)",
    )
    simulate.add_argument("--engine", choices=_ENGINES, default="compiled", help=_ENGINE_HELP)
    _add_diff(commands)
    return parser


def _add_lifecycle(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lifecycle = commands.add_parser(
        "lifecycle",
        help="draw one coordinator's run in a trace as a sequence diagram",
        description="Replay TRACE (JSON lines as for replay, '-' for stdin) and draw one "
        "coordinator's run as a sequence diagram (Caller, Coordinator, Source, Destination, "
        "Transfer): inputs, rejections, issued actions, chart states, the completion.",
    )
    lifecycle.add_argument("trace", metavar="TRACE", help="trace file (JSON lines), or - for stdin")
    lifecycle.add_argument(
        "--coordinator",
        metavar="KEY",
        help="which coordinator of the trace to draw (default: the first one created)",
    )
    lifecycle.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="output file: .mmd (Mermaid), .md (Markdown with a Mermaid block), .svg or .png",
    )
    lifecycle.add_argument(
        "--title", metavar="TEXT", help="the diagram's title (default: Lifecycle of KEY)"
    )
    lifecycle.add_argument(
        "--revision",
        choices=_REVISIONS,
        default="seed",
        help="protocol revision of 'new' lines that name none, as for replay (default: seed)",
    )
    lifecycle.add_argument(
        "--list",
        action="store_true",
        help="print the trace's coordinators with their inputs and completion instead",
    )


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


def _natural(text: str) -> int:
    """A count in plain ASCII digits: ``int()`` would also take '٣', ' 3', '+3' and '1_000'."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(
            f"expected a whole number (digits 0-9), got {quoted(text)}"
        )
    return int(text)


def _positive(text: str) -> int:
    value = _natural(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {quoted(text)}")
    return value


def _remember(text: str) -> int | None:
    if text == "all":
        return None
    try:
        return _natural(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a count or 'all', got {quoted(text)}") from None


def _add_diff(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    diff = commands.add_parser(
        "diff",
        help="compare two coordinators' observable behaviour; shortest trace per difference",
        description="Explore the product of two sides breadth-first and report every kind of "
        "difference in their replies with its shortest trace. A side is REVISION[@ENGINE] "
        "(seed, seed@statechart, ...), git:REV[:REVISION][@ENGINE] (the project committed "
        "at REV of the repository containing the working directory) or "
        "worktree[:REVISION][@ENGINE]. Exit status 0 equivalent, 1 different, 2 error.",
    )
    diff.add_argument("a", metavar="A", help="the side before the change")
    diff.add_argument("b", metavar="B", help="the side after the change")
    diff.add_argument("--json", action="store_true", help="print one JSON object")
    diff.add_argument("-o", "--output", metavar="DIR", help="write a review of the change to DIR")
    diff.add_argument(
        "--max-states",
        type=_positive,
        default=50_000,
        metavar="N",
        help="state pairs explored per order before giving up (default 50000)",
    )


def _runner(command: str) -> Callable[[argparse.Namespace], int]:
    module, _, function = _RUNNERS[command].partition(":")
    return cast(
        Callable[[argparse.Namespace], int], getattr(importlib.import_module(module), function)
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the environment's refusals become one line on stderr, not a traceback."""
    args = build_parser().parse_args(argv)
    command: str = args.command
    _replace_closed_std_streams()
    try:
        status = _runner(command)(args)
        sys.stdout.flush()  # a full disk or a closed pipe on stdout is reported here, not at exit
    except BrokenPipeError:  # the reader went away (e.g. `| head`): nothing more to say
        _settle_stdout()
        return 0
    except KeyboardInterrupt:
        _settle_stdout()
        return 130
    except OSError as error:
        _settle_stdout()
        return _fail(command, _os_error_text(error))
    except UnicodeError as error:  # text that the output's encoding cannot hold
        _settle_stdout()
        return _fail(command, str(error))
    return status


def _fail(command: str, message: str) -> int:
    print(f"handoff-fsm {command}: {message}", file=sys.stderr)
    return 2


def _os_error_text(error: OSError) -> str:
    """``FILE: reason``, as Unix tools say it (``reason`` alone when no file is known)."""
    reason = error.strerror or str(error)
    if error.filename is None:
        return reason
    return f"{error.filename!s}: {reason}"


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
