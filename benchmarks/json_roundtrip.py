"""The replay baseline: read JSON lines, parse each, serialise it again, write it.

Rule kept here: exactly the I/O and JSON work ``handoff-fsm replay`` cannot avoid
(same file handling, one ``json.loads`` and one ``json.dumps`` per line) and
nothing else, so the replay benchmark's ratio is the price of the coordination.
Usage: ``python benchmarks/json_roundtrip.py TRACE -o OUT``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("trace")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args(argv)
    with (
        open(args.trace, encoding="utf-8") as source,
        open(args.output, "w", encoding="utf-8") as out,
    ):
        write = out.write
        for line in source:
            write(json.dumps(json.loads(line), allow_nan=True))
            write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
