"""A completed coordinator that may still change, kept as a few dozen bytes.

Rule kept here: a record rebuilds a coordinator that answers every later input
exactly as the one it was made from. A record is that coordinator's snapshot,
the library's own contract for continuing a handoff exactly where it stopped
(``restore(snapshot())``), so nothing here knows what a coordinator holds or
which inputs it still takes; it only makes the snapshot small. The snapshot's
handoff id, the one value no two handoffs share, is kept as its 16 bytes and
cut out of the JSON text (a NUL byte, which JSON text never holds, marks where
it was); the rest is deflated against a preset dictionary, the first snapshot
this object recorded. The snapshots of one trace's handoffs then differ only in
a few numbers, so a record costs a tenth of the snapshot's text or less.

It is what lets trace replay retire an ``a976b2bf`` handoff that succeeded (a
late ``Canceled`` still cancels its decoding destination) like any other
completed one, in memory that does not grow with the coordinator it replaces.
"""

from __future__ import annotations

import zlib
from typing import Any
from uuid import UUID

_WINDOW_BITS = -11
"""A raw deflate stream (no header or checksum: the record is never read elsewhere),
with a 2 KiB window: room for the dictionary and a snapshot beside it."""
_LEVEL = 6
_MEMORY_LEVEL = 1
"""The least memory for the compressor's state: a snapshot is a few hundred bytes, and
setting up a larger state costs more than compressing one does."""
_ID_MARK = b"\x00"
"""Where the handoff id was cut out of the text (JSON text escapes every control character)."""
_WITH_ID = 0x80
"""Set in a record's first byte when the record carries the handoff id's 16 bytes."""


class CoordinatorRecords:
    """Turns coordinators into records and back (see the module rule).

    One object per replayer: it keeps the dictionary its records were deflated
    against and the kinds of coordinator (class, engine, snapshot type) they came
    from; a record names its kind by its index in its first byte (with
    :data:`_WITH_ID`), so a replayer whose factory builds another implementation
    still gets its own class back.
    """

    __slots__ = ("_deflate", "_dictionary", "_kind_index", "_kinds")

    def __init__(self) -> None:
        self._dictionary: bytes | None = None
        self._deflate: Any = None  # zlib's compressor type has no public name
        """A compressor primed with the dictionary, copied for each record: priming one
        (hashing the whole dictionary) costs more than deflating a snapshot does."""
        self._kinds: list[tuple[Any, str | None, Any]] = []
        self._kind_index: dict[tuple[Any, str | None, Any], int] = {}

    def encode(self, coordinator: Any) -> bytes | None:
        """``coordinator`` as a record, or ``None`` when it cannot be rebuilt from one.

        That is, when its class offers no ``restore`` or it no ``snapshot``, or taking
        the snapshot raises: only a snapshot guarantees the rebuilt coordinator
        answers exactly as this one would.
        """
        restore = getattr(type(coordinator), "restore", None)
        take = getattr(coordinator, "snapshot", None)
        if not callable(restore) or not callable(take):
            return None
        try:
            snapshot = take()
            text: bytes = snapshot.model_dump_json().encode("utf-8")
        except Exception:  # an implementation's snapshot that fails cannot be kept this way
            return None
        engine = getattr(coordinator, "engine", None)
        kind = (type(coordinator), engine if isinstance(engine, str) else None, type(snapshot))
        index = self._kind_index.get(kind)
        if index is None:
            if len(self._kinds) >= _WITH_ID:
                return None
            index = self._kind_index[kind] = len(self._kinds)
            self._kinds.append(kind)
        head = bytes((index,))
        handoff_id = getattr(snapshot, "handoff_id", None)
        if isinstance(handoff_id, UUID):
            head = bytes((index | _WITH_ID,)) + handoff_id.bytes
            text = text.replace(str(handoff_id).encode("ascii"), _ID_MARK)
        if self._deflate is None:
            self._dictionary = text
            self._deflate = zlib.compressobj(
                _LEVEL, zlib.DEFLATED, _WINDOW_BITS, _MEMORY_LEVEL, zlib.Z_DEFAULT_STRATEGY,
                text,
            )  # fmt: skip
        deflate = self._deflate.copy()
        record: bytes = head + deflate.compress(text) + deflate.flush()
        return record

    def decode(self, record: bytes) -> Any:
        """The coordinator ``record`` was made from, rebuilt (a new object each time)."""
        assert self._dictionary is not None, "a record made elsewhere"
        cls, engine, snapshot_type = self._kinds[record[0] & ~_WITH_ID]
        body = record[1:]
        if record[0] & _WITH_ID:
            handoff_id, body = UUID(bytes=body[:16]), body[16:]
        inflate = zlib.decompressobj(_WINDOW_BITS, self._dictionary)
        text = inflate.decompress(body) + inflate.flush()
        if record[0] & _WITH_ID:
            text = text.replace(_ID_MARK, str(handoff_id).encode("ascii"))
        snapshot = snapshot_type.model_validate_json(text)
        return cls.restore(snapshot) if engine is None else cls.restore(snapshot, engine=engine)
