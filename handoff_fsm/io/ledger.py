"""An exact, compact record of the coordinators replay no longer keeps.

Rule kept here: a key, once added, is found forever, with the completion its
coordinator ended with; no other key is ever found (no hashing shortcuts, no
false positives). It is what lets replay forget a finished coordinator without
letting its key be reused: ``new`` on a recorded key is still a duplicate.

Layout: every key is appended to one ``bytearray`` as ``length (LEB128) | UTF-8
bytes | completion byte``; an open-addressing table (``array('Q')``, linear
probing, at most half full) maps a key's hash to its entry's offset. A key thus
costs its own bytes plus a few more (``benchmarks/ledger.py`` measures it), a fraction
of what a ``dict`` entry with its ``str`` key costs.
"""

from __future__ import annotations

from array import array

from handoff_fsm.model import HandoffCompletion

_COMPLETIONS = tuple(HandoffCompletion)
_CODES = {completion: index for index, completion in enumerate(_COMPLETIONS)}
_INITIAL_SLOTS = 8


class RetiredKeys:
    """Keys of forgotten coordinators and how each completed (see the module rule)."""

    __slots__ = ("_blob", "_count", "_table")

    def __init__(self) -> None:
        self._blob = bytearray()
        self._table = array("Q", bytes(8 * _INITIAL_SLOTS))
        """Entry offset + 1 per slot; 0 is an empty slot."""
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.completion(key) is not None

    def completion(self, key: str) -> HandoffCompletion | None:
        """How the coordinator named ``key`` completed, or ``None`` if ``key`` was never added."""
        if not self._count:
            return None
        data = _encode(key)
        slot = self._table[self._probe(data)]
        if not slot:
            return None
        return _COMPLETIONS[self._blob[self._entry_end(slot - 1)]]

    def add(self, key: str, completion: HandoffCompletion) -> None:
        """Record ``key`` (a key already recorded keeps its first completion)."""
        data = _encode(key)
        index = self._probe(data)
        if self._table[index]:
            return
        blob = self._blob
        self._table[index] = len(blob) + 1
        size = len(data)
        while size > 0x7F:
            blob.append(0x80 | (size & 0x7F))
            size >>= 7
        blob.append(size)
        blob += data
        blob.append(_CODES[completion])
        self._count += 1
        if 2 * self._count > len(self._table):
            self._grow()

    def _probe(self, data: bytes) -> int:
        """The slot holding ``data``, or the empty slot where it would go."""
        table = self._table
        mask = len(table) - 1
        index = hash(data) & mask
        while True:
            slot = table[index]
            if not slot or self._key_at(slot - 1) == data:
                return index
            index = (index + 1) & mask

    def _key_at(self, offset: int) -> bytes:
        start, end = self._key_span(offset)
        return bytes(self._blob[start:end])

    def _key_span(self, offset: int) -> tuple[int, int]:
        blob = self._blob
        size = shift = 0
        while True:
            byte = blob[offset]
            offset += 1
            size |= (byte & 0x7F) << shift
            if byte < 0x80:
                return offset, offset + size
            shift += 7

    def _entry_end(self, offset: int) -> int:
        """Where the completion byte of the entry at ``offset`` is."""
        return self._key_span(offset)[1]

    def _grow(self) -> None:
        old = self._table
        table = self._table = array("Q", bytes(16 * len(old)))
        mask = len(table) - 1
        for slot in old:
            if slot:
                index = hash(self._key_at(slot - 1)) & mask
                while table[index]:
                    index = (index + 1) & mask
                table[index] = slot


def _encode(key: str) -> bytes:
    return key.encode("utf-8", "surrogatepass")
