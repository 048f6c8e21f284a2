"""An exact, compact record of the coordinators replay no longer keeps.

Rule kept here: a key, once added, is found forever, with the completion its
coordinator ended with and the record (bytes) replay kept of it, if any; no other
key is ever found (no hashing shortcuts, no false positives). It is what lets
replay forget a finished coordinator without letting its key be reused: ``new``
on a recorded key is still a duplicate. Only :meth:`RetiredKeys.replace` changes
what a key holds (replay retiring again a coordinator it had rebuilt from its
record); nothing ever removes a key.

Layout: every key is appended to one ``bytearray`` as ``length (LEB128) | UTF-8
bytes | code byte [| record length (LEB128) | record]`` (the code is the
completion, with its high bit set when a record follows); an open-addressing
table (``array('Q')``, linear probing, at most half full) maps a key's hash to
its entry's offset. A key thus costs its own bytes, its record's, plus a few more
(``benchmarks/ledger.py`` measures it), a fraction of what a ``dict`` entry with
its ``str`` key costs. A replaced entry is rewritten in place when the new one
fits, else appended anew (the old bytes stay, unreachable: the ledger never
shrinks).
"""

from __future__ import annotations

from array import array

from handoff_fsm.model import HandoffCompletion

_COMPLETIONS = tuple(HandoffCompletion)
_CODES = {completion: index for index, completion in enumerate(_COMPLETIONS)}
_WITH_RECORD = 0x80
"""Set in an entry's code byte when a record follows it."""
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
        slot = self._table[self._probe(_encode(key))]
        if not slot:
            return None
        return _COMPLETIONS[self._blob[self._entry_end(slot - 1)] & ~_WITH_RECORD]

    def record(self, key: str) -> bytes | None:
        """The record kept with ``key`` (``b""`` when none), or ``None`` if it was never added."""
        if not self._count:
            return None
        slot = self._table[self._probe(_encode(key))]
        if not slot:
            return None
        code_at = self._entry_end(slot - 1)
        if not self._blob[code_at] & _WITH_RECORD:
            return b""
        start, end = self._key_span(code_at + 1)
        return bytes(self._blob[start:end])

    def add(self, key: str, completion: HandoffCompletion, record: bytes = b"") -> None:
        """Record ``key`` (a key already recorded keeps its first completion and record)."""
        data = _encode(key)
        index = self._probe(data)
        if not self._table[index]:
            self._insert(index, data, completion, record)

    def replace(self, key: str, completion: HandoffCompletion, record: bytes = b"") -> None:
        """Record ``key`` with this completion and record, whatever it held before."""
        data = _encode(key)
        index = self._probe(data)
        slot = self._table[index]
        if not slot:
            self._insert(index, data, completion, record)
            return
        code_at = self._entry_end(slot - 1)
        blob = self._blob
        old_end = code_at + 1
        if blob[code_at] & _WITH_RECORD:
            old_end = self._key_span(old_end)[1]
        tail = _tail(completion, record)
        if len(tail) <= old_end - code_at:
            blob[code_at : code_at + len(tail)] = tail  # the rest is never read
        else:
            self._append(index, data, completion, record)

    def _insert(
        self, index: int, data: bytes, completion: HandoffCompletion, record: bytes
    ) -> None:
        """Add a new key's entry at the empty slot ``index``."""
        self._append(index, data, completion, record)
        self._count += 1
        if 2 * self._count > len(self._table):
            self._grow()

    def _append(
        self, index: int, data: bytes, completion: HandoffCompletion, record: bytes
    ) -> None:
        """Write a whole entry at the blob's end and point slot ``index`` at it."""
        blob = self._blob
        self._table[index] = len(blob) + 1
        _append_size(blob, len(data))
        blob += data
        blob += _tail(completion, record)

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
        """Where the length-prefixed bytes at ``offset`` (a key, or a record) start and end."""
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
        """Where the code byte of the entry at ``offset`` is."""
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


def _append_size(blob: bytearray, size: int) -> None:
    """``size`` as LEB128: seven bits a byte, low bits first."""
    while size > 0x7F:
        blob.append(0x80 | (size & 0x7F))
        size >>= 7
    blob.append(size)


def _tail(completion: HandoffCompletion, record: bytes) -> bytearray:
    """An entry's bytes after its key: the code byte, then the record if there is one."""
    code = _CODES[completion]
    if not record:
        return bytearray((code,))
    tail = bytearray((code | _WITH_RECORD,))
    _append_size(tail, len(record))
    tail += record
    return tail
