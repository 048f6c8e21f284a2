"""What every subcommand shares: its options, their types, and the one way to fail.

Rule kept here: an option two subcommands take is declared once, here, and takes the
same values everywhere: ``--revision`` takes the names of
:class:`~handoff_fsm.model.Revision` and hands the library a ``Revision``, ``--engine``
the coordinator's :data:`~handoff_fsm.coordinator.ENGINES`, a trace is ``TRACE`` or
``-``, a count is ASCII digits (:func:`natural`) and every float option is read by
:func:`real_number`. A subcommand that cannot do what it was asked says so in one line on stderr
through :func:`fail`, and exits 2. Nothing here imports more than the protocol's own
package, so ``handoff-fsm --help`` stays light.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Final, NoReturn, TypeAlias

from handoff_fsm.coordinator import ENGINES
from handoff_fsm.errors import quoted
from handoff_fsm.model import VERDICT_LOSSES, Revision

if TYPE_CHECKING:
    from handoff_fsm.io.follow import FollowedRun

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""Where a subcommand's module adds its parser (``register(commands)``)."""

BOTH: Final = "both"
"""``--revision both`` / ``--order both``: every one, each on its own."""

_ENGINE_HELP: Final = (
    "how coordinators run: the compiled table (default) or the statechart interpreter"
)


def fail(command: str, message: str, *, code: str | None = None, json_output: bool = False) -> int:
    """Say on stderr why ``command`` could not run, in one line; exit status 2.

    ``code`` (an error code) prefixes the message; with ``json_output`` the same error
    also goes to stdout as one JSON object, for a caller that reads ``--json``.
    """
    text = f"{code}: {message}" if code is not None else message
    print(f"handoff-fsm {command}: {text}", file=sys.stderr)
    if json_output:
        sys.stdout.write(json.dumps({"error": {"code": code, "message": message}}) + "\n")
    return 2


def one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make ``parser``'s mistakes one line on stderr (``handoff-fsm CMD: message``), exit 2.

    argparse prints its usage before the message; a command whose every mistake is one
    line (``export``, whose output goes to other tools' pipelines) reports the message
    alone, as :func:`fail` does, and ``--help`` still shows the usage.
    """

    def error(message: str) -> NoReturn:
        print(f"{parser.prog}: {message}", file=sys.stderr)
        sys.exit(2)

    parser.error = error  # type: ignore[method-assign]


def add_choice(
    parser: argparse.ArgumentParser,
    option: str,
    kind: type[StrEnum],
    help: str,
    *,
    default: StrEnum | str | None,
    extra: tuple[str, ...] = (),
    required: bool = False,
) -> None:
    """``option`` taking one member of the enum ``kind`` by value (or one of ``extra``).

    The library receives the member itself, and a wrong name is one line that lists the
    right ones.
    """
    names = (*(member.value for member in kind), *extra)

    def member(text: str) -> StrEnum | str:
        if text in extra:
            return text
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"invalid choice: {quoted(text)} (choose from {', '.join(map(repr, names))})"
            ) from None

    parser.add_argument(
        option,
        type=member,
        default=default,
        required=required,
        metavar="{" + ",".join(names) + "}",
        help=help,
    )


def add_revision(parser: argparse.ArgumentParser, help: str, *, both: bool = False) -> None:
    """``--revision R`` (default: the seed), or with ``both``: ``R|both`` (default: both)."""
    if both:
        add_choice(parser, "--revision", Revision, help, default=BOTH, extra=(BOTH,))
    else:
        add_choice(parser, "--revision", Revision, help, default=Revision.SEED)


def revisions_named(chosen: Revision | str) -> list[Revision]:
    """The revisions ``--revision R|both`` names, in declaration order."""
    return list(Revision) if chosen == BOTH else [Revision(chosen)]


def add_engine(parser: argparse.ArgumentParser) -> None:
    """``--engine compiled|statechart``."""
    parser.add_argument("--engine", choices=ENGINES, default="compiled", help=_ENGINE_HELP)


def add_trace(parser: argparse.ArgumentParser, *, old_option: bool = False) -> None:
    """The trace a command reads: ``TRACE``; ``-`` is stdin.

    With ``old_option``, ``--trace TRACE`` (``diagram``'s spelling before it took the
    trace like ``replay`` and ``lifecycle``) still works; :func:`trace_of` reads the
    trace either way.
    """
    what = "trace file (JSON lines), or - for stdin"
    if old_option:
        parser.add_argument("trace", nargs="?", metavar="TRACE", help=what)
        parser.add_argument(
            "--trace", dest="trace_option", metavar="TRACE", help="the same as TRACE (old spelling)"
        )
    else:
        parser.add_argument("trace", metavar="TRACE", help=what)


def trace_of(args: argparse.Namespace) -> str:
    """The trace given as ``TRACE`` or (see :func:`add_trace`) ``--trace TRACE``, once."""
    trace: str | None = args.trace
    old: str | None = getattr(args, "trace_option", None)
    if trace is not None and old is not None:
        args.parser.error("give the trace once: TRACE (--trace TRACE is its old spelling)")
    if trace is None and old is None:
        args.parser.error("the following arguments are required: TRACE")
    return trace if trace is not None else str(old)


def add_coordinator(parser: argparse.ArgumentParser) -> None:
    """``--coordinator KEY``: which coordinator of the trace a drawing follows."""
    parser.add_argument(
        "--coordinator",
        metavar="KEY",
        help="which coordinator of the trace to draw (default: the first one created)",
    )


def natural(text: str) -> int:
    """A count in plain ASCII digits: ``int()`` would also take '٣', ' 3', '+3' and '1_000'."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(
            f"expected a whole number (digits 0-9), got {quoted(text)}"
        )
    return int(text)


_NUMBER: Final = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A number as a person types it in ASCII: digits, at most one point, an exponent."""
_NON_FINITE: Final = frozenset({"nan", "inf", "infinity"})


def real_number(text: str) -> float:
    """The one reader of every float option: ASCII only, and the text itself in errors.

    ``float()`` would also take Arabic-Indic or fullwidth digits, ' 0.5', '0_5' and
    '1e400' (read as infinity). Here a number is ``[+-]digits[.digits][e[+-]digits]``,
    or nan/inf/infinity spelled out (ASCII, any case), which reach the setting's own
    check and are refused there with its code; a finite spelling beyond a float's range
    is refused here, quoting what was typed.
    """
    if _NUMBER.fullmatch(text) is None and text.lstrip("+-").lower() not in _NON_FINITE:
        raise argparse.ArgumentTypeError(
            f"expected a number in ASCII digits (such as 0.5 or 1e-3), got {quoted(text)}"
        )
    value = float(text)
    if _NUMBER.fullmatch(text) is not None and value in (math.inf, -math.inf):
        raise argparse.ArgumentTypeError(f"number out of range, got {quoted(text)}")
    return value


def add_losses(parser: argparse.ArgumentParser, what: str = "the verdict") -> None:
    """``--losses N``: the lost messages a written verdict's tolerance is judged with."""
    parser.add_argument(
        "--losses",
        type=natural,
        default=VERDICT_LOSSES,
        metavar="N",
        help=f"judge each system property in {what} with up to N lost messages too, and "
        f"show its tolerance (default {VERDICT_LOSSES}; 0: no message lost only, faster)",
    )


def positive(text: str) -> int:
    """A count of at least one."""
    value = natural(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {quoted(text)}")
    return value


def shown_key(key: str) -> str:
    """A coordinator key as the terminal should show it: as is, or JSON-quoted if unprintable."""
    return key if key.isprintable() and key.strip() == key and key else json.dumps(key)


SHOWN_ERRORS: Final = 5
"""Lines that name no coordinator listed on stderr (the rest are counted)."""


def warn_unattributed(command: str, run: FollowedRun, what: str) -> None:
    """Say on stderr which lines of a followed trace named no coordinator: the first
    :data:`SHOWN_ERRORS` as ``line N <what>: code: message``, then how many more."""
    for line, code, message in run.unattributed[:SHOWN_ERRORS]:
        print(
            f"handoff-fsm {command}: line {line} {what}: {code.value}: {message}", file=sys.stderr
        )
    more = run.unattributed_count - min(len(run.unattributed), SHOWN_ERRORS)
    if more > 0:
        print(f"handoff-fsm {command}: {more} more lines name no coordinator", file=sys.stderr)
