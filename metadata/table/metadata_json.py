"""The bytes of a metadata.json file, and gzip that costs what a commit adds.

Every metadata file repeats every live snapshot (the spec requires it), so after a few
thousand commits a file is megabytes of JSON, nearly all of it identical to the previous
version's. lakecat writes the object with its stable part first::

    {"format-version":2,"table-uuid":...,"location":...,"snapshots":[s1,...,sN],<the rest>}

(the order of keys in a JSON object carries no meaning; every reader accepts it) and, for a
gzip-compressed file, keeps per table a copy of the deflate compressor as it stood right after
``sN`` together with the compressed bytes it had produced. The next version of the table,
whose snapshot list starts with the same ``s1 .. sN``, resumes from a copy of that state and
compresses only its new snapshots and the rest of the object: what a commit adds, not what
the history holds. The result is byte for byte the gzip stream of the whole file compressed
in one go.

Reading uses the same layout: a process that parsed an earlier version of the table hands it
to :func:`known_snapshots`, and when the new file starts with that version's head and
snapshots byte for byte, only the rest of the file is parsed and the earlier snapshot objects
are reused (a writer that commits after others did parses what they added, not the history).

The cache is an optimisation with no say in correctness: an entry is used only when the new
file's prefix is byte-equal to the one it compressed (same table, same location, the same
snapshot bytes in the same order); anything else (another table, expired snapshots, the first
commit in a process) compresses the whole file and starts a new entry. Entries are few
(``_MAX_TABLES``) and are dropped least recently used first.
"""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.table.snapshots import Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata

# Level 1: a file of 2,000 snapshots shrinks from 1.2 MB to 180 KB; level 6 saves another
# 10% at three times the CPU (docs/benchmarks.md, issue 7).
GZIP_LEVEL = 1
_GZIP_WBITS = 31  # a gzip header and trailer (mtime 0), so the bytes depend on content only
_MAX_TABLES = 8
_PREFIX_KEYS = ("format-version", "table-uuid", "location", "snapshots")


@dataclass(frozen=True)
class _Layout:
    head: bytes  # '{"format-version":2,...,"snapshots":['
    snapshots: tuple[bytes, ...]
    tail: bytes  # '],"last-sequence-number":...}'

    def prefix(self, count: int) -> bytes:
        return self.head + b",".join(self.snapshots[:count])

    def plain(self) -> bytes:
        return self.prefix(len(self.snapshots)) + self.tail


@dataclass(frozen=True)
class _Resumable:
    """A compressor that has consumed ``head`` and ``snapshots`` (and produced ``out``)."""

    head: bytes
    snapshots: tuple[bytes, ...]
    compressor: Any  # zlib.Compress; never compressed into, only copied
    out: bytes

    def resumes(self, layout: _Layout) -> bool:
        count = len(self.snapshots)
        return (
            self.head == layout.head
            and len(layout.snapshots) >= count
            and layout.snapshots[:count] == self.snapshots
        )


def serialize_metadata(metadata: TableMetadata, *, gzipped: bool = False) -> bytes:
    """The bytes of a metadata.json file, gzip-compressed when ``gzipped``."""
    layout = _layout(metadata)
    if not gzipped:
        return layout.plain()
    return _GZIP_CACHE.compress(metadata.table_uuid, layout)


def _layout(metadata: TableMetadata) -> _Layout:
    obj = metadata.to_json(with_snapshots=False)
    head = {key: obj.pop(key) for key in _PREFIX_KEYS[:-1]}
    try:
        head_bytes = _head(head)
        rest = orjson.dumps(obj)
    except orjson.JSONEncodeError as exc:
        raise ValidationError(f"table metadata cannot be written as JSON: {exc}") from exc
    return _Layout(
        head=head_bytes,
        snapshots=tuple(s.json_bytes() for s in metadata.snapshots),
        tail=b"]," + rest[1:] if len(rest) > 2 else b"]}",
    )


def _head(values: dict[str, Any]) -> bytes:
    """``{"format-version":2,"table-uuid":...,"location":...,"snapshots":[``"""
    return orjson.dumps(values)[:-1] + b',"snapshots":['


def known_snapshots(
    data: bytes, previous: TableMetadata | None
) -> tuple[tuple[Snapshot, ...], dict[str, Any]] | None:
    """Parse the JSON ``data`` of a table's metadata file reusing an earlier version of it.

    When ``data`` is in the layout above and starts with ``previous``'s head and first
    snapshots byte for byte, returns those snapshots and the rest of the object parsed
    (its ``snapshots`` list holding only the snapshots after them): the bytes they share are
    neither parsed nor turned into objects again. None when nothing is shared (another
    writer's layout, expired snapshots, another table), and the caller parses it all.
    """
    if previous is None or not previous.snapshots:
        return None
    head_values = {
        "format-version": previous.format_version,
        "table-uuid": previous.table_uuid,
        "location": previous.location,
    }
    head = _head(head_values)
    if not data.startswith(head):
        return None
    count, pos = _all_known(data, len(head), previous.snapshots)
    if count == 0:
        count, pos = _known_prefix(data, len(head), previous.snapshots)
    if count == 0:
        return None
    try:
        rest = orjson.loads(b'{"snapshots":[' + data[pos:])
    except orjson.JSONDecodeError:
        return None  # the caller's full parse reports it
    if not isinstance(rest, dict) or any(key in rest for key in head_values):
        return None  # repeated keys: let the full parse decide which one counts
    rest.update(head_values)
    return previous.snapshots[:count], rest


def _all_known(data: bytes, pos: int, snapshots: tuple[Snapshot, ...]) -> tuple[int, int]:
    """(count, position after them) when ``data`` continues at ``pos`` with all of
    ``snapshots`` and then ``,`` or ``]`` (a table's next version, nothing expired): one
    comparison instead of one per snapshot. (0, ``pos``) otherwise."""
    joined = b",".join([s.json_bytes() for s in snapshots])
    if data.startswith(joined, pos):
        end = pos + len(joined)
        separator = data[end : end + 1]
        if separator == b"]":
            return len(snapshots), end
        if separator == b",":
            return len(snapshots), end + 1
    return 0, pos


def _known_prefix(data: bytes, pos: int, snapshots: tuple[Snapshot, ...]) -> tuple[int, int]:
    """(count, position after them) of the leading ``snapshots`` that ``data`` repeats from
    ``pos`` on, each followed by ``,`` or ``]``: one by one (when the later ones are gone)."""
    count = 0
    for snapshot in snapshots:
        text = snapshot.json_bytes()  # a whole JSON object: a match is that same snapshot
        if not data.startswith(text, pos):
            break
        end = pos + len(text)
        separator = data[end : end + 1]
        if separator == b"]":
            return count + 1, end
        if separator != b",":
            break
        count, pos = count + 1, end + 1
    return count, pos


class _GzipCache:
    def __init__(self, max_tables: int) -> None:
        self._max = max_tables
        self._entries: OrderedDict[str, _Resumable] = OrderedDict()
        self._lock = threading.Lock()

    def compress(self, table_uuid: str, layout: _Layout) -> bytes:
        with self._lock:
            entry = self._entries.get(table_uuid)
            if entry is not None and entry.resumes(layout):
                compressor, out, done = entry.compressor.copy(), entry.out, len(entry.snapshots)
            else:
                compressor, out, done = None, b"", 0
        if compressor is None:
            compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, _GZIP_WBITS)
            out = compressor.compress(layout.head)
        new = layout.snapshots[done:]
        if new:
            out += compressor.compress((b"," if done else b"") + b",".join(new))
        resumable = _Resumable(layout.head, layout.snapshots, compressor.copy(), out)
        with self._lock:
            self._entries[table_uuid] = resumable
            self._entries.move_to_end(table_uuid)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        return bytes(out + compressor.compress(layout.tail) + compressor.flush())

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_GZIP_CACHE = _GzipCache(_MAX_TABLES)
