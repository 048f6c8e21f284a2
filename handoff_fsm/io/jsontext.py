"""JSON text to Python values, reading what serde_json reads: bounded work, no recursion.

Rule kept here: this is the one place where trace text becomes Python values,
and it accepts exactly the JSON a serde reader of the Rust types accepts, plus
the wire format's ``NaN``/``Infinity``/``-Infinity`` literals. Anything else is
``invalid_input``, decided before a single coordinator sees the line:

- **UTF-8 only**: bytes are decoded strictly; a ``str`` must be encodable as
  UTF-8 (no lone surrogate characters); a byte-order mark is not JSON
  (``json.loads`` would skip one in bytes, and guess UTF-16/32 from the bytes).
- **At most** :data:`MAX_NESTING` **containers deep**: the trace schema nests 4
  (line, fact, variant, timing). The depth is measured on the text before parsing,
  so nothing deep is ever built and no recursion limit can bite (Python's parser
  raises ``RecursionError`` near 1,000 levels, and anything that walked a deep
  value afterwards would too).
- **No key twice in one object**: serde refuses a repeated field; taking the
  last one, as ``json.loads`` does, would let two readers see two different lines.
- **No lone UTF-16 surrogate escape** (``"\\ud800"``): it is not Unicode text,
  serde refuses it, and a reply echoing it would not be readable by a Rust peer.
- **Integer literals classified as serde_json classifies them**: a literal is
  an ``int`` only when it fits u64 (or i64, when negative); ``-0`` and every
  larger magnitude are floats (``-0`` is ``-0.0``, ``1`` followed by 400 zeros is
  ``inf``, as ``1e400`` is). So an integer field (u64) accepts exactly the
  literals serde accepts, a float field reads every literal as the nearest f64,
  and no conversion downstream can overflow.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from handoff_fsm.errors import HandoffError, handoff_error, quoted
from handoff_fsm.io.errors import TraceErrorCode

MAX_NESTING = 4
"""Deepest nesting of objects/arrays in a trace line (line → fact → variant → timing)."""

_U64_MAX = 2**64 - 1
_I64_MIN = -(2**63)


class _RepeatedKeyError(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _integer(text: str) -> int | float:
    """serde_json's reading of the integer literal ``text`` (see the module rule)."""
    if len(text) < 19:  # at most 18 digits: fits i64 and, if positive, u64
        return -0.0 if text == "-0" else int(text)
    if len(text) <= 20:  # 19 or 20 digits, or a sign and 19 digits: decide exactly
        value = int(text)
        if _I64_MIN <= value <= _U64_MAX:
            return value
    return float(text)  # correctly rounded; beyond f64 it is +-inf


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKeyError(key)
            seen.add(key)
    return obj


_DECODER = json.JSONDecoder(parse_int=_integer, object_pairs_hook=_object)
_decode = _DECODER.decode
_scan: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
"""The decoder's own scanner (typeshed omits it): ``decode`` is this, between whitespace."""

# A JSON string, or an unterminated one running to the end of the text: the match
# can never fail once it has started, so stripping strings is linear however
# hostile the text (no retry from every later quote).
_STRING = re.compile(r'"[^"\\]*(?:\\(?:.|\Z)[^"\\]*)*(?:"|\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"{": 1, "[": 1, "}": -1, "]": -1}


def nesting(text: str) -> int:
    """How many objects/arrays deep ``text`` nests, brackets inside strings not counted."""
    skeleton = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, skeleton), initial=0))


def _invalid(message: str) -> HandoffError:
    return handoff_error(TraceErrorCode.INVALID_INPUT, message)


def loads(text: str | bytes) -> Any:
    """Parse one JSON text under the module's rules; ``invalid_input`` if it breaks one.

    The message never quotes more than a few dozen characters of the text.
    """
    if not isinstance(text, str):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _invalid(f"not UTF-8: {error.reason} at byte {error.start}") from None
    elif not text.isascii():  # O(1) for the usual ASCII line
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:  # a str holding a lone surrogate character
            raise _invalid(
                f"not Unicode text: a lone surrogate at character {error.start}"
            ) from None
    if text.startswith("\ufeff"):
        raise _invalid("a byte-order mark (U+FEFF) is not JSON")
    # Counting brackets is cheap and bounds the depth from above; only a line with
    # more brackets than the schema has (in strings, or nested) is measured exactly.
    if text.count("{") + text.count("[") > MAX_NESTING and nesting(text) > MAX_NESTING:
        raise _invalid(
            f"invalid JSON: nested more than {MAX_NESTING} objects/arrays deep "
            "(a trace line nests at most 4)"
        )
    # A value with no whitespace around it but a final newline, as a trace line is, is
    # read by the scanner directly (``decode`` without its whitespace matching); any
    # other text, and any error, by the whole decoder, which names the error.
    try:
        value, end = _scan(text, 0)
        scanned = end == len(text) or text[end:] == "\n"
    except _RepeatedKeyError as error:
        raise _repeated(error) from None
    except (StopIteration, ValueError):  # json.JSONDecodeError is a ValueError
        scanned = False
    if not scanned:
        value = _exact(text)
    # One look for an escape at all (most lines have none), then for a surrogate's.
    if "\\u" in text and ("\\ud" in text or "\\uD" in text) and _has_lone_surrogate(value):
        raise _invalid("invalid JSON: a \\u escape is a lone UTF-16 surrogate")
    return value


def _exact(text: str) -> Any:
    """``text`` read by the whole decoder, which names the error precisely."""
    try:
        return _decode(text)
    except _RepeatedKeyError as error:
        raise _repeated(error) from None
    except ValueError as error:  # json.JSONDecodeError
        raise _invalid(f"invalid JSON: {error}") from None


def _repeated(error: _RepeatedKeyError) -> HandoffError:
    return _invalid(f"invalid JSON: key {quoted(error.key)} repeated in one object")


def _has_lone_surrogate(value: Any) -> bool:
    # The value is at most MAX_NESTING deep, so dumping it is cheap and cannot recurse far;
    # paired escapes were already joined into one character by the parser.
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def dumps(obj: Any) -> str:
    """JSON text with non-finite floats as the ``NaN``/``Infinity``/``-Infinity`` literals."""
    return json.dumps(obj, allow_nan=True)
