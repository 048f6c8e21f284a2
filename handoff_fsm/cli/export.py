"""``handoff-fsm export``: the chart as a document another tool runs (SCXML, JSON, YAML, XState).

Rule kept here: argument handling and file plumbing only; the document is the library's
(:func:`~handoff_fsm.render.export.export_chart`, the function ``handoff-fsm diagrams``
writes ``diagrams/`` with). ``--revision`` takes what it takes everywhere (a
:class:`~handoff_fsm.model.Revision`), and ``family``; a format or revision it does not
know, like any mistake on its command line, is one line on stderr naming the ones it
does (:func:`~handoff_fsm.cli.common.one_line_errors`), and exit status 2, before anything
is written. ``-o`` follows the
one output rule (:func:`~handoff_fsm.cli.files.check_outputs`; ``-``, the default, is
standard output) and a file is replaced atomically, so a write that fails (a full disk, a
folder without write permission) leaves what was there as it was, and is
:func:`handoff_fsm.cli.main`'s one line naming the file.
"""

from __future__ import annotations

import argparse
from enum import StrEnum
from typing import Final

from handoff_fsm.cli.common import Commands, add_choice, one_line_errors
from handoff_fsm.cli.files import STDIN, Kind, Output, check_outputs, output_text
from handoff_fsm.model import Revision


class Format(StrEnum):
    """The formats, as ``--format`` spells them: :class:`~handoff_fsm.render.export.ExportFormat`
    said again, so that building the parser imports no more than the core
    (tests/test_export.py holds the two equal)."""

    SCXML = "scxml"
    JSON = "json"
    YAML = "yaml"
    XSTATE = "xstate"


FORMATS: Final = tuple(fmt.value for fmt in Format)
FAMILY: Final = "family"
"""``--revision family``: every revision in one document (:data:`handoff_fsm.render.export.FAMILY`,
held equal by the same test)."""


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "export",
        help="write the statechart as SCXML, JSON or YAML (python-statemachine) or XState",
        description="Write the chart as a protocol revision runs it (or, with --revision "
        "family, every revision in one document, the revision a parameter of its data "
        "model) as a document other tools run: SCXML and python-statemachine's JSON and "
        "YAML (statemachine.io.load), or an XState v5 machine config (createMachine, "
        "Stately's editor). What a format cannot run is named in the document.",
    )
    one_line_errors(parser)
    add_choice(parser, "--format", Format, "the document's format", default=None, required=True)
    add_choice(
        parser,
        "--revision",
        Revision,
        "the protocol revision whose chart to write, or family for every revision in one "
        "document (default: seed)",
        default=Revision.SEED,
        extra=(FAMILY,),
    )
    parser.add_argument(
        "-o",
        "--output",
        default=STDIN,
        metavar="OUT",
        help="where to write the document (default: - for stdout)",
    )
    parser.set_defaults(run=cli_export)


def cli_export(args: argparse.Namespace) -> int:
    """``handoff-fsm export --format F [--revision R|family] [-o OUT]``."""
    check_outputs([Output("-o", args.output, Kind.STREAM)])
    from handoff_fsm.render.export import export_chart

    revision: Revision | str = args.revision
    fmt: Format = args.format
    document = export_chart(fmt.value, None if revision == FAMILY else revision)
    with output_text(args.output) as out:
        out.write(document)
    if args.output != STDIN:
        print(f"wrote {args.output} ({fmt.value}, revision {revision})")
    return 0
