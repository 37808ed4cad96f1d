"""Reading and writing Iceberg v2 and v3 manifests and manifest lists (Avro, through fastavro).

Sequence numbers and snapshot ids follow the spec's "Sequence Number Inheritance": a writer
may leave an entry's ``snapshot_id``, ``sequence_number`` and ``file_sequence_number`` null
for ADDED entries, and readers fill them in from the manifest's row in the manifest list. A
manifest written that way does not depend on the commit it ends up in, so a commit retry can
reuse it and only rewrite the manifest list. :func:`write_manifest` therefore returns a
:class:`ManifestFile` with ``sequence_number == -1`` ("assigned when the manifest list is
written"), and :func:`write_manifest_list` replaces it with the commit's sequence number.

Row ids (format v3) are inherited the same way: new data files are written with a null
``first_row_id``, and :func:`assign_first_row_ids` gives each data manifest without one its
range when the commit's manifest list is written (the spec's "First Row ID Assignment").

Everything goes through :class:`FileIO`. Files that fastavro cannot decode raise
:class:`CorruptMetadata` naming the file; a missing file raises the FileIO's
``FileNotFoundStorageError``.
"""

from __future__ import annotations

import io as _io
import json
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from operator import itemgetter
from typing import Any, TypeVar, cast

import fastavro
from fastavro.schema import SchemaParseException
from fastavro.write import Writer

from lakecat.metadata.errors import CorruptMetadata, LakecatError, ValidationError
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.manifests.avro_blocks import container, encode_row, read_blocks
from lakecat.metadata.manifests.avro_decoder import (
    EntryMaker,
    SplitRecords,
    Unsupported,
    decode_entries,
    decode_records,
    split_records,
)
from lakecat.metadata.manifests.datafile import (
    Content,
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    PartitionFieldSummary,
    Status,
)
from lakecat.metadata.manifests.order import (
    BLOCKS_KEY,
    ORDER_KEY,
    PARTITION_ORDER,
    block_starts,
    encode_block_summaries,
    ordered_by_partition,
)
from lakecat.metadata.manifests.schemas import (
    FORMAT_VERSION,
    PartitionDecoder,
    PartitionEncoder,
    parsed_manifest_entry_schema,
    parsed_manifest_list_schema,
    partition_decoder,
    partition_encoder,
    partition_fields_of,
    primitive_of,
)
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.partitioning.transforms import parse_transform
from lakecat.metadata.schema.conversions import to_bytes
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    DoubleType,
    FloatType,
    NestedField,
    PrimitiveType,
    StructType,
)

UNASSIGNED_SEQ = -1
"""A manifest's sequence number before the manifest list of its commit assigns one."""

DEFAULT_CODEC = "deflate"  # what Iceberg's default "gzip" Avro codec means in Avro terms

# What fastavro (and zlib under it) raise on bytes that are not a valid Avro file of the
# expected shape. Translated to CorruptMetadata where files are decoded.
DECODE_ERRORS = (
    ValueError,
    EOFError,
    KeyError,
    IndexError,
    TypeError,
    OverflowError,
    StopIteration,
    zlib.error,
    SchemaParseException,
)


def partition_type(spec: PartitionSpec, schema: Schema) -> StructType:
    """The partition struct of ``spec``: one optional field per partition field, with the
    partition field's id and name and the type its transform produces from its source."""
    fields = []
    for pf in spec.fields:
        source = schema.find_type(pf.source_id)
        result = parse_transform(pf.transform, strict=False).result_type(source)
        fields.append(NestedField(pf.field_id, pf.name, result, required=False))
    return StructType(tuple(fields))


# ---- manifests ---------------------------------------------------------------------------
def write_manifest(
    io: FileIO,
    location: str,
    *,
    spec: PartitionSpec,
    schema: Schema,
    entries: Iterable[ManifestEntry],
    added_snapshot_id: int,
    content: ManifestContent = ManifestContent.DATA,
    codec: str = DEFAULT_CODEC,
    format_version: int = 2,
    keep_order: bool = False,
) -> ManifestFile:
    """Write one manifest (exclusive create) of a table of ``format_version`` and return its
    manifest-list row.

    Entries are written ordered by partition (see :mod:`lakecat.metadata.manifests.order`),
    or in the order given with ``keep_order`` (a copy of an existing manifest: in v3 the
    ADDED data files inherit their row ids in manifest order). ``None`` snapshot ids and
    sequence numbers stay null so they are inherited. Only ADDED entries may leave sequence
    numbers null. The returned row has ``sequence_number == -1``; ``min_sequence_number`` is
    the smallest explicit data sequence number of a live entry, or -1 when there is none (as
    Iceberg Java does).

    In v3 manifests, ADDED data files are written with a null ``first_row_id`` (inherited from
    the manifest's, assigned by the manifest list), EXISTING and DELETED ones with the value
    they inherited (as the spec's "First Row ID Inheritance" says), delete files with none.
    """
    ptype = partition_type(spec, schema)
    v3 = format_version >= 3
    encode_partition = partition_encoder(ptype)
    stats = _ManifestStats(ptype)
    records = []
    listed = list(entries)
    ordered = None if keep_order else ordered_by_partition(listed)
    for entry in listed if ordered is None else ordered:
        _check_entry(entry, spec=spec, content=content, added_snapshot_id=added_snapshot_id)
        stats.add(entry)
        records.append(_entry_record(entry, encode_partition, v3=v3))
    metadata = {
        "schema": json.dumps(schema.to_json(), separators=(",", ":")),
        "schema-id": str(schema.schema_id),
        "partition-spec": json.dumps([f.to_json() for f in spec.fields], separators=(",", ":")),
        "partition-spec-id": str(spec.spec_id),
        "format-version": str(format_version) if v3 else FORMAT_VERSION,
        "content": "deletes" if content == ManifestContent.DELETES else "data",
    }
    starts = None
    if ordered is not None and spec.fields:
        starts = block_starts(ordered)
        metadata[ORDER_KEY] = PARTITION_ORDER
        metadata[BLOCKS_KEY] = _block_summaries(ordered, starts, primitive_of(ptype.fields[0]))
    data = _encode(
        parsed_manifest_entry_schema(ptype, 3 if v3 else 2),
        records,
        metadata,
        codec,
        block_starts=starts,
    )
    io.write(location, data, exclusive=True)
    return stats.manifest_file(
        location,
        length=len(data),
        spec_id=spec.spec_id,
        content=content,
        added_snapshot_id=added_snapshot_id,
    )


def read_manifest(
    io: FileIO, manifest: ManifestFile, *, specs: Mapping[int, PartitionSpec], schema: Schema
) -> list[ManifestEntry]:
    """Every entry of a manifest (DELETED ones too), with inheritance applied.

    Null snapshot ids inherit ``manifest.added_snapshot_id``; null sequence numbers of ADDED
    entries inherit ``manifest.sequence_number`` (and stay ``None`` while that is still -1,
    i.e. before a manifest list assigned it). A null sequence number on an EXISTING or
    DELETED entry of a v2 manifest is corrupt metadata. Manifests from v1 (sequence number 0
    in the list) inherit 0 for every entry, as the spec's upgrade rules say.
    """
    data = io.read(manifest.manifest_path)
    return decode_manifest(data, manifest, specs=specs, schema=schema)


def decode_manifest(
    data: bytes,
    manifest: ManifestFile,
    *,
    specs: Mapping[int, PartitionSpec],
    schema: Schema,
) -> list[ManifestEntry]:
    """As :func:`read_manifest`, from the file's bytes."""
    entries = decode_manifest_entries(data, manifest, specs=specs, schema=schema)
    if entries is not None:
        return entries
    decoded = decode_manifest_records(data, manifest.manifest_path)
    try:
        decode = entry_decoder(
            manifest,
            decoded.writer_schema,
            specs=specs,
            schema=schema,
            maps_decoded=decoded.maps_decoded,
        )
        return [decode(rec) for rec in decoded.records]
    except LakecatError:
        raise
    except DECODE_ERRORS as exc:
        raise CorruptMetadata(f"cannot read manifest {manifest.manifest_path}: {exc!r}") from exc


@dataclass(frozen=True, slots=True)
class ManifestRecords:
    """A manifest file decoded to Avro records (dicts, as fastavro returns them), not yet to
    entries. ``maps_decoded``: the stats maps are ``{field id: value}`` dicts already (the
    compiled decoder), not fastavro's lists of key/value records."""

    writer_schema: Any
    records: list[dict[str, Any]]
    maps_decoded: bool


def decode_manifest_records(data: bytes, location: str) -> ManifestRecords:
    """The records of a manifest file, decoded by
    :mod:`~lakecat.metadata.manifests.avro_decoder` (a decoder compiled from the file's
    schema, about twice as fast as fastavro), or by fastavro for what that module leaves
    to it (a codec or schema it does not handle, or bytes it cannot decode: fastavro then
    decodes them or says why not)."""
    try:
        writer_schema, records = decode_records(data)
        return ManifestRecords(writer_schema, records, maps_decoded=True)
    except (Unsupported, RecursionError, *DECODE_ERRORS):
        pass
    try:
        reader = fastavro.reader(_io.BytesIO(data))
        records = cast(list[dict[str, Any]], list(reader))
        return ManifestRecords(reader.writer_schema, records, maps_decoded=False)
    except DECODE_ERRORS as exc:
        raise CorruptMetadata(f"cannot read manifest {location}: {exc!r}") from exc


def decode_manifest_entries(
    data: bytes,
    manifest: ManifestFile,
    *,
    specs: Mapping[int, PartitionSpec],
    schema: Schema,
) -> list[ManifestEntry] | None:
    """Every entry of a manifest file, as :func:`decode_manifest` returns them, decoded
    straight from the bytes by :func:`~lakecat.metadata.manifests.avro_decoder.decode_entries`
    (no record dicts: a third of the objects, and of the time, of decoding records and then
    building entries); None when that decoder does not handle the file (the caller decodes it
    to records then, which reports what is corrupt)."""

    def maker(writer_schema: Any) -> EntryMaker:
        return entry_maker(manifest, writer_schema, specs=specs, schema=schema)

    try:
        return decode_entries(data, maker)
    except LakecatError:
        raise
    except (Unsupported, RecursionError, *DECODE_ERRORS):
        return None


def split_manifest_records(data: bytes) -> SplitRecords | None:
    """The records of a manifest file split but not decoded beyond each one's status and
    partition (:func:`~lakecat.metadata.manifests.avro_decoder.split_records`), or None when
    the compiled decoder does not handle the file (decode it whole then)."""
    try:
        return split_records(data)
    except (Unsupported, RecursionError, *DECODE_ERRORS):
        return None


EntryDecoder = Callable[[dict[str, Any]], ManifestEntry]


def entry_decoder(
    manifest: ManifestFile,
    writer_schema: Any,
    *,
    specs: Mapping[int, PartitionSpec],
    schema: Schema,
    maps_decoded: bool = False,
) -> EntryDecoder:
    """Turns fastavro records of ``manifest`` (written with ``writer_schema``) into entries,
    as :func:`read_manifest` does (for readers that decode the file's blocks themselves).
    ``maps_decoded``: the records come from :mod:`~lakecat.metadata.manifests.avro_decoder`,
    which decodes the stats maps to ``{field id: value}`` dicts already."""
    plain = record_decoder(
        manifest, writer_schema, specs=specs, schema=schema, maps_decoded=maps_decoded
    )
    return _inheriting_row_ids(manifest, plain)


_Make = TypeVar("_Make", bound=Callable[..., ManifestEntry])


def _inheriting_row_ids(manifest: ManifestFile, make: _Make) -> _Make:
    """``make`` with v3 row lineage applied ("First Row ID Inheritance"): a live data file
    without a first_row_id gets the manifest's, plus the record counts of the files before it
    that had none. The entries must be made in file order (manifests with a first_row_id are
    never decoded block by block)."""
    first_row_id = manifest.first_row_id
    if first_row_id is None or manifest.content is not ManifestContent.DATA:
        return make
    next_row_id = first_row_id

    def inheriting(*args: Any) -> ManifestEntry:
        nonlocal next_row_id
        entry = make(*args)
        f = entry.data_file
        if entry.status is Status.DELETED or f.first_row_id is not None:
            return entry
        entry = replace(entry, data_file=replace(f, first_row_id=next_row_id))
        next_row_id += f.record_count
        return entry

    return cast(_Make, inheriting)


def entry_maker(
    manifest: ManifestFile,
    writer_schema: Any,
    *,
    specs: Mapping[int, PartitionSpec],
    schema: Schema,
) -> EntryMaker:
    """As :func:`entry_decoder` (maps decoded), for the entry decoder of
    :func:`~lakecat.metadata.manifests.avro_decoder.decode_entries`: makes an entry of a
    record's fields, given one by one, in file order."""
    read_partition = record_partition_decoder(manifest, writer_schema, specs=specs, schema=schema)

    def make(*fields: Any) -> ManifestEntry:
        return _make_entry(manifest, read_partition, *fields)

    return _inheriting_row_ids(manifest, make)


def record_partition_decoder(
    manifest: ManifestFile,
    writer_schema: Any,
    *,
    specs: Mapping[int, PartitionSpec],
    schema: Schema,
) -> PartitionDecoder:
    """Turns the ``data_file.partition`` record of ``manifest``'s records into a tuple."""
    location = manifest.manifest_path
    spec = specs.get(manifest.partition_spec_id)
    if spec is None:
        raise CorruptMetadata(
            f"{location}: partition spec {manifest.partition_spec_id} is not in the table"
        )
    return partition_decoder(
        partition_fields_of(writer_schema, location), partition_type(spec, schema)
    )


def record_decoder(
    manifest: ManifestFile,
    writer_schema: Any,
    *,
    specs: Mapping[int, PartitionSpec],
    schema: Schema,
    maps_decoded: bool = False,
) -> EntryDecoder:
    """As :func:`entry_decoder`, without v3 first-row-id inheritance: each record on its own
    (a caller that decodes only some records applies :func:`inherited_first_row_ids`)."""
    read_partition = record_partition_decoder(manifest, writer_schema, specs=specs, schema=schema)
    as_map = stats_map(maps_decoded)
    return lambda rec: _entry(rec, manifest, read_partition, as_map)


def inherited_first_row_ids(
    manifest: ManifestFile, records: Sequence[dict[str, Any]]
) -> list[int | None] | None:
    """Per record of ``manifest``, the ``first_row_id`` its data file inherits ("First Row ID
    Inheritance", as :func:`entry_decoder` assigns them in file order), None for records
    that inherit none; None when the manifest passes on no row ids at all."""
    next_row_id = manifest.first_row_id
    if next_row_id is None or manifest.content is not ManifestContent.DATA:
        return None
    out: list[int | None] = []
    for rec in records:
        df = rec["data_file"]
        if rec["status"] == Status.DELETED or df.get("first_row_id") is not None:
            out.append(None)
        else:
            out.append(next_row_id)
            next_row_id += df["record_count"]
    return out


# ---- manifest lists ----------------------------------------------------------------------
class KnownRows:
    """Manifest-list rows this process has encoded or decoded, for reuse.

    Lists are written one row per Avro block (:mod:`lakecat.metadata.manifests.avro_blocks`), so a
    row carried from one list to the next keeps its bytes: ``encoded`` maps a manifest path to
    the row last encoded for it (written again as is when the row is the same), ``decoded``
    maps a block's bytes to the rows decoded from them (or encoded into them). Each holds at
    most ``max_rows`` rows; when full it starts afresh (rows of current lists come back on
    their next use). While ``decoded`` is empty, lists are decoded whole by fastavro: block
    by block pays only when most blocks are known.
    """

    def __init__(self, max_rows: int = 50_000) -> None:
        self.max_rows = max_rows
        self.encoded: dict[tuple[str, int], tuple[ManifestFile, bytes]] = {}
        self.decoded: dict[bytes, tuple[ManifestFile, ...]] = {}
        self._decoded_rows = 0

    def encode(
        self, m: ManifestFile, snapshot_id: int, sequence_number: int, format_version: int = 2
    ) -> bytes:
        version = 3 if format_version >= 3 else 2  # a row's bytes differ between the two
        key = (m.manifest_path, version)
        hit = self.encoded.get(key)
        if hit is not None and (hit[0] is m or hit[0] == m):
            return hit[1]
        row = encode_row(
            parsed_manifest_list_schema(version),
            _manifest_file_record(m, snapshot_id, sequence_number, v3=version == 3),
        )
        assigned = UNASSIGNED_SEQ not in (m.sequence_number, m.min_sequence_number)
        if assigned and self.max_rows > 0:
            if len(self.encoded) >= self.max_rows:
                self.encoded.clear()
            self.encoded[key] = (m, row)
            self._remember(row, (m,))  # its block in any list decodes to this same row
        return row

    def rows_of(self, data: bytes) -> list[ManifestFile]:
        """The rows of a manifest list file's bytes, decoding only blocks not seen before."""
        if not self.decoded:  # nothing to reuse yet (a fresh catalog): fastavro's fast path
            return _decode_all(data)
        blocks = read_blocks(data)
        if blocks is None:  # a codec only fastavro itself reads
            return _decode_all(data)
        unknown = sum(count for count, block in blocks.blocks if block not in self.decoded)
        if unknown > _DECODE_ONE_BY_ONE:
            # fastavro decodes a whole file much faster than block by block
            rows = _decode_all(data)
            if sum(count for count, _ in blocks.blocks) != len(rows):
                raise CorruptMetadata("the Avro blocks do not add up to the rows decoded")
            start = 0
            for count, block in blocks.blocks:
                self._remember(block, tuple(rows[start : start + count]))
                start += count
            return rows
        out: list[ManifestFile] = []
        for count, block in blocks.blocks:
            hit = self.decoded.get(block)
            if hit is None:
                hit = tuple(_manifest_file(rec) for rec in blocks.decode(block, count))
                self._remember(block, hit)
            out.extend(hit)
        return out

    def _remember(self, block: bytes, rows: tuple[ManifestFile, ...]) -> None:
        if 0 < len(rows) <= self.max_rows:
            if self._decoded_rows + len(rows) > self.max_rows:
                self.decoded.clear()
                self._decoded_rows = 0
            self.decoded[block] = rows
            self._decoded_rows += len(rows)


_DECODE_ONE_BY_ONE = 8  # more unknown rows than this: decode the whole file at once


def _decode_all(data: bytes) -> list[ManifestFile]:
    records = fastavro.reader(_io.BytesIO(data))
    return [_manifest_file(rec) for rec in cast(Iterable[dict[str, Any]], records)]


def write_manifest_list(
    io: FileIO,
    location: str,
    manifests: Iterable[ManifestFile],
    *,
    snapshot_id: int,
    parent_snapshot_id: int | None,
    sequence_number: int,
    known: KnownRows | None = None,
    format_version: int = 2,
    first_row_id: int | None = None,
) -> tuple[list[ManifestFile], int | None]:
    """Write a snapshot's manifest list (exclusive create), one row per Avro block; return
    the manifests as listed and, for v3, the snapshot's ``added-rows``.

    Manifests whose (min) sequence number is still -1 were written for this commit: they get
    ``sequence_number``. Such a manifest must name this commit's snapshot as its
    ``added_snapshot_id``, otherwise an older manifest would silently be re-sequenced.
    ``known``: rows encoded before, reused (see :class:`KnownRows`).

    A v3 list (``format_version`` 3) needs the snapshot's ``first_row_id`` (written to the
    file's metadata too, as Java does): data manifests without one get theirs from it
    (:func:`assign_first_row_ids`), and the number of ids assigned is returned.
    """
    known = known or KnownRows(max_rows=0)
    manifests = list(manifests)
    v3 = format_version >= 3
    added_rows = None
    if v3:
        if first_row_id is None:
            raise ValidationError("a v3 manifest list needs the snapshot's first-row-id")
        manifests, added_rows = assign_first_row_ids(manifests, first_row_id)
    try:
        rows = [known.encode(m, snapshot_id, sequence_number, format_version) for m in manifests]
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValidationError(f"cannot encode a manifest list row: {exc}") from exc
    metadata = {
        "snapshot-id": str(snapshot_id),
        "parent-snapshot-id": "null" if parent_snapshot_id is None else str(parent_snapshot_id),
        "sequence-number": str(sequence_number),
        "format-version": "3" if v3 else FORMAT_VERSION,
    }
    if v3:
        metadata["first-row-id"] = str(first_row_id)
    schema = parsed_manifest_list_schema(3 if v3 else 2)
    io.write(location, container(schema, metadata, rows), exclusive=True)
    return manifests, added_rows


def assign_first_row_ids(
    manifests: Iterable[ManifestFile], first_row_id: int
) -> tuple[list[ManifestFile], int]:
    """``manifests`` with a ``first_row_id`` for each data manifest that has none, and the
    number of row ids assigned (the snapshot's ``added-rows``).

    The spec's "First Row ID Assignment", its recommended way (and Iceberg Java's): ranges
    start at the snapshot's ``first_row_id``, in list order, each as long as the manifest's
    added and existing rows; manifests that have one keep it, delete manifests get none.
    """
    out: list[ManifestFile] = []
    next_id = first_row_id
    for m in manifests:
        if m.content is ManifestContent.DATA and m.first_row_id is None:
            m = replace(m, first_row_id=next_id)
            next_id += m.added_rows_count + m.existing_rows_count
        out.append(m)
    return out, next_id - first_row_id


def as_listed(manifests: Iterable[ManifestFile], sequence_number: int) -> list[ManifestFile]:
    """``manifests`` as a manifest list written with ``sequence_number`` lists them (and as
    reading it back returns them): unassigned sequence numbers become ``sequence_number``."""
    out = []
    for m in manifests:
        if UNASSIGNED_SEQ in (m.sequence_number, m.min_sequence_number):
            m = replace(
                m,
                sequence_number=sequence_number
                if m.sequence_number == UNASSIGNED_SEQ
                else m.sequence_number,
                min_sequence_number=sequence_number
                if m.min_sequence_number == UNASSIGNED_SEQ
                else m.min_sequence_number,
            )
        out.append(m)
    return out


def read_manifest_list(
    io: FileIO, location: str, *, known: KnownRows | None = None
) -> list[ManifestFile]:
    """The rows of a manifest list. v1 lists read with sequence numbers 0 and DATA content.

    With ``known``, blocks decoded before are not decoded again (see :class:`KnownRows`).
    """
    data = io.read(location)
    try:
        return _decode_all(data) if known is None else known.rows_of(data)
    except LakecatError as exc:
        if isinstance(exc, CorruptMetadata):
            raise CorruptMetadata(f"cannot read manifest list {location}: {exc}") from exc
        raise
    except DECODE_ERRORS as exc:
        raise CorruptMetadata(f"cannot read manifest list {location}: {exc!r}") from exc


# ---- encoding ----------------------------------------------------------------------------
def _encode(
    parsed_schema: Any,
    records: list[dict[str, Any]],
    metadata: dict[str, str],
    codec: str,
    *,
    block_starts: Sequence[int] | None = None,
) -> bytes:
    """An Avro file of ``records``; with ``block_starts``, a block starts at each of those
    record indexes and nowhere else."""
    buf = _io.BytesIO()
    try:
        if block_starts is None:
            fastavro.writer(buf, parsed_schema, records, codec=codec, metadata=metadata)
            return buf.getvalue()
        # blocks end only where flush() is called
        writer = Writer(buf, parsed_schema, codec=codec, sync_interval=2**62, metadata=metadata)
        starts = set(block_starts)
        for i, record in enumerate(records):
            if i in starts:
                writer.flush()
            writer.write(record)
        writer.flush()
    except (ValueError, TypeError, OverflowError) as exc:
        # fastavro rejects values that do not fit the schema (wrong type, out of range)
        # and unknown codecs; both are bad input from the caller.
        raise ValidationError(f"cannot encode Avro records: {exc}") from exc
    return buf.getvalue()


def _check_entry(
    entry: ManifestEntry, *, spec: PartitionSpec, content: ManifestContent, added_snapshot_id: int
) -> None:
    df = entry.data_file
    if len(df.partition) != len(spec.fields):
        raise ValidationError(
            f"{df.file_path}: partition {df.partition!r} has {len(df.partition)} values, "
            f"spec {spec.spec_id} has {len(spec.fields)} fields"
        )
    if df.spec_id != spec.spec_id:
        raise ValidationError(f"{df.file_path}: written for spec {df.spec_id}, not {spec.spec_id}")
    if (df.content == Content.DATA) != (content == ManifestContent.DATA):
        raise ValidationError(
            f"{df.file_path}: {df.content.name} file in a {content.name} manifest"
        )
    if entry.sequence_number is None or entry.file_sequence_number is None:
        # Mirrors Iceberg Java's V2 writer: only this commit's new files may inherit.
        if entry.status != Status.ADDED:
            raise ValidationError(
                f"{df.file_path}: only ADDED entries may leave sequence numbers to inheritance"
            )
        if entry.snapshot_id is not None and entry.snapshot_id != added_snapshot_id:
            raise ValidationError(
                f"{df.file_path}: unassigned sequence number for an entry of snapshot "
                f"{entry.snapshot_id}, not of {added_snapshot_id}"
            )


# Optional values are handed to fastavro in its tuple notation, ``(branch name, value)``, so
# that it writes the union branch directly instead of validating the value against each one.
def _opt(branch: str, value: Any) -> Any:
    return None if value is None else (branch, value)


def _kv(m: Mapping[int, Any] | None) -> Any:
    return None if m is None else ("array", [{"key": k, "value": v} for k, v in m.items()])


def _array(values: tuple[int, ...] | None) -> Any:
    return None if values is None else ("array", list(values))


def _entry_record(
    entry: ManifestEntry, encode_partition: PartitionEncoder, *, v3: bool = False
) -> dict[str, Any]:
    df = entry.data_file
    record = {
        "status": int(entry.status),
        "snapshot_id": _opt("long", entry.snapshot_id),
        "sequence_number": _opt("long", entry.sequence_number),
        "file_sequence_number": _opt("long", entry.file_sequence_number),
        "data_file": {
            "content": int(df.content),
            "file_path": df.file_path,
            "file_format": df.file_format,
            "partition": encode_partition(df.partition),
            "record_count": df.record_count,
            "file_size_in_bytes": df.file_size_in_bytes,
            "column_sizes": _kv(df.column_sizes),
            "value_counts": _kv(df.value_counts),
            "null_value_counts": _kv(df.null_value_counts),
            "nan_value_counts": _kv(df.nan_value_counts),
            "lower_bounds": _kv(df.lower_bounds),
            "upper_bounds": _kv(df.upper_bounds),
            "key_metadata": _opt("bytes", df.key_metadata),
            "split_offsets": _array(df.split_offsets),
            "equality_ids": _array(df.equality_ids),
            "sort_order_id": _opt("int", df.sort_order_id),
        },
    }
    if v3:
        # new data files inherit their first_row_id; others keep the one they inherited
        first_row_id = (
            None
            if entry.status is Status.ADDED or df.content is not Content.DATA
            else df.first_row_id
        )
        record["data_file"].update(
            first_row_id=_opt("long", first_row_id),
            referenced_data_file=_opt("string", df.referenced_data_file),
            content_offset=_opt("long", df.content_offset),
            content_size_in_bytes=_opt("long", df.content_size_in_bytes),
        )
    return record


class _FieldStats:
    """Running summary of one partition field (Iceberg Java's PartitionFieldStats)."""

    __slots__ = ("contains_nan", "contains_null", "lower", "type", "upper")

    def __init__(self, t: PrimitiveType) -> None:
        self.type = t
        self.contains_null = False
        self.contains_nan = False
        self.lower: Any = None
        self.upper: Any = None

    def add(self, value: Any) -> None:
        if value is None:
            self.contains_null = True
        elif isinstance(self.type, FloatType | DoubleType) and value != value:
            self.contains_nan = True
        elif self.lower is None:
            self.lower = self.upper = value
        elif value < self.lower:
            self.lower = value
        elif value > self.upper:
            self.upper = value

    def summary(self) -> PartitionFieldSummary:
        return PartitionFieldSummary(
            contains_null=self.contains_null,
            # Java always writes the flag (false for types that have no NaN).
            contains_nan=self.contains_nan,
            lower_bound=None if self.lower is None else to_bytes(self.type, self.lower),
            upper_bound=None if self.upper is None else to_bytes(self.type, self.upper),
        )


def _block_summaries(
    ordered: Sequence[ManifestEntry], starts: Sequence[int], first_type: PrimitiveType
) -> str:
    bounds = [*starts, len(ordered)]
    counts, summaries = [], []
    for begin, end in pairwise(bounds):
        stats = _FieldStats(first_type)
        for entry in ordered[begin:end]:
            stats.add(entry.data_file.partition[0])
        counts.append(end - begin)
        summaries.append(stats.summary())
    return encode_block_summaries(counts, summaries)


class _ManifestStats:
    """Counts and partition summaries of the entries written to one manifest.

    Like Java, partition summaries cover every entry written, DELETED ones included.
    """

    def __init__(self, ptype: StructType) -> None:
        self.fields = [_FieldStats(primitive_of(f)) for f in ptype.fields]
        self.files = {Status.ADDED: 0, Status.EXISTING: 0, Status.DELETED: 0}
        self.rows = {Status.ADDED: 0, Status.EXISTING: 0, Status.DELETED: 0}
        self.min_sequence_number: int | None = None

    def add(self, entry: ManifestEntry) -> None:
        status = Status(entry.status)
        self.files[status] += 1
        self.rows[status] += entry.data_file.record_count
        for stats, value in zip(self.fields, entry.data_file.partition, strict=True):
            stats.add(value)
        seq = entry.sequence_number
        if (
            status != Status.DELETED
            and seq is not None
            and (self.min_sequence_number is None or seq < self.min_sequence_number)
        ):
            self.min_sequence_number = seq

    def manifest_file(
        self,
        location: str,
        *,
        length: int,
        spec_id: int,
        content: ManifestContent,
        added_snapshot_id: int,
    ) -> ManifestFile:
        # An inherited (null) data sequence number of an ADDED entry will be the commit's,
        # which is above every explicit one, so the explicit minimum stays correct; with no
        # explicit one the minimum is the commit's own and is left to the manifest list.
        min_seq = UNASSIGNED_SEQ if self.min_sequence_number is None else self.min_sequence_number
        return ManifestFile(
            manifest_path=location,
            manifest_length=length,
            partition_spec_id=spec_id,
            content=content,
            sequence_number=UNASSIGNED_SEQ,
            min_sequence_number=min_seq,
            added_snapshot_id=added_snapshot_id,
            added_files_count=self.files[Status.ADDED],
            existing_files_count=self.files[Status.EXISTING],
            deleted_files_count=self.files[Status.DELETED],
            added_rows_count=self.rows[Status.ADDED],
            existing_rows_count=self.rows[Status.EXISTING],
            deleted_rows_count=self.rows[Status.DELETED],
            partitions=tuple(f.summary() for f in self.fields),
        )


def _manifest_file_record(
    m: ManifestFile, snapshot_id: int, sequence_number: int, *, v3: bool = False
) -> dict[str, Any]:
    seq, min_seq = m.sequence_number, m.min_sequence_number
    if UNASSIGNED_SEQ in (seq, min_seq) and m.added_snapshot_id != snapshot_id:
        raise ValidationError(
            f"{m.manifest_path}: unassigned sequence number for a manifest of snapshot "
            f"{m.added_snapshot_id}, not of the committing snapshot {snapshot_id}"
        )
    return {
        "manifest_path": m.manifest_path,
        "manifest_length": m.manifest_length,
        "partition_spec_id": m.partition_spec_id,
        "content": int(m.content),
        "sequence_number": sequence_number if seq == UNASSIGNED_SEQ else seq,
        "min_sequence_number": sequence_number if min_seq == UNASSIGNED_SEQ else min_seq,
        "added_snapshot_id": m.added_snapshot_id,
        "added_files_count": m.added_files_count,
        "existing_files_count": m.existing_files_count,
        "deleted_files_count": m.deleted_files_count,
        "added_rows_count": m.added_rows_count,
        "existing_rows_count": m.existing_rows_count,
        "deleted_rows_count": m.deleted_rows_count,
        "partitions": None
        if m.partitions is None
        else (
            "array",
            [
                {
                    "contains_null": p.contains_null,
                    "contains_nan": _opt("boolean", p.contains_nan),
                    "lower_bound": _opt("bytes", p.lower_bound),
                    "upper_bound": _opt("bytes", p.upper_bound),
                }
                for p in m.partitions
            ],
        ),
        "key_metadata": _opt("bytes", m.key_metadata),
        **({"first_row_id": _opt("long", m.first_row_id)} if v3 else {}),
    }


# ---- decoding ----------------------------------------------------------------------------
# Dicts, not tuples: a negative code in a corrupt file must fail the lookup (KeyError).
_STATUS = {int(s): s for s in Status}
_CONTENT = {int(c): c for c in Content}
_MANIFEST_CONTENT = {int(c): c for c in ManifestContent}


def _count(rec: dict[str, Any], name: str) -> int:
    value = rec.get(name)
    if value is None:
        raise CorruptMetadata(f"manifest list row {rec.get('manifest_path')!r} has no {name}")
    return int(value)


def _manifest_file(rec: dict[str, Any]) -> ManifestFile:
    partitions = rec.get("partitions")
    return ManifestFile(
        manifest_path=rec["manifest_path"],
        manifest_length=rec["manifest_length"],
        partition_spec_id=rec["partition_spec_id"],
        content=_MANIFEST_CONTENT[rec.get("content", 0)],
        # v1 lists have no sequence numbers: the spec's upgrade rules read them as 0.
        sequence_number=rec.get("sequence_number", 0),
        min_sequence_number=rec.get("min_sequence_number", 0),
        added_snapshot_id=rec["added_snapshot_id"],
        added_files_count=_count(rec, "added_files_count"),
        existing_files_count=_count(rec, "existing_files_count"),
        deleted_files_count=_count(rec, "deleted_files_count"),
        added_rows_count=_count(rec, "added_rows_count"),
        existing_rows_count=_count(rec, "existing_rows_count"),
        deleted_rows_count=_count(rec, "deleted_rows_count"),
        partitions=None
        if partitions is None
        else tuple(
            PartitionFieldSummary(
                p["contains_null"],
                p.get("contains_nan"),
                p.get("lower_bound"),
                p.get("upper_bound"),
            )
            for p in partitions
        ),
        key_metadata=rec.get("key_metadata"),
        first_row_id=rec.get("first_row_id"),
    )


_KEY_VALUE = itemgetter("key", "value")


def _map(pairs: Any) -> dict[Any, Any] | None:
    if pairs is None:
        return None
    if isinstance(pairs, dict):  # a writer that used an Avro map with string keys
        return {int(k): v for k, v in pairs.items()}
    return dict(map(_KEY_VALUE, pairs))


def _same_map(decoded: dict[Any, Any] | None) -> dict[Any, Any] | None:
    return decoded


def stats_map(maps_decoded: bool) -> Callable[[Any], dict[Any, Any] | None]:
    """What turns a record's stats map into a data file's: nothing for the compiled decoder's
    records (``maps_decoded``), :func:`_map` for fastavro's."""
    return _same_map if maps_decoded else _map


def _entry(
    rec: dict[str, Any],
    manifest: ManifestFile,
    read_partition: PartitionDecoder,
    as_map: Callable[[Any], dict[Any, Any] | None] = _map,
) -> ManifestEntry:
    df = rec["data_file"]
    return _make_entry(
        manifest,
        read_partition,
        rec["status"],
        rec.get("snapshot_id"),
        rec.get("sequence_number"),
        rec.get("file_sequence_number"),
        df.get("content", 0),
        df["file_path"],
        df["file_format"],
        df["partition"],
        df["record_count"],
        df["file_size_in_bytes"],
        as_map(df.get("column_sizes")),
        as_map(df.get("value_counts")),
        as_map(df.get("null_value_counts")),
        as_map(df.get("nan_value_counts")),
        as_map(df.get("lower_bounds")),
        as_map(df.get("upper_bounds")),
        df.get("key_metadata"),
        df.get("split_offsets"),
        df.get("equality_ids"),
        df.get("sort_order_id"),
        df.get("first_row_id"),
        df.get("referenced_data_file"),
        df.get("content_offset"),
        df.get("content_size_in_bytes"),
    )


def _make_entry(
    manifest: ManifestFile,
    read_partition: PartitionDecoder,
    status_code: int,
    snapshot_id: int | None,
    seq: int | None,
    file_seq: int | None,
    content: int,
    file_path: str,
    file_format: str,
    partition: dict[str, Any],
    record_count: int,
    file_size_in_bytes: int,
    column_sizes: dict[int, int] | None,
    value_counts: dict[int, int] | None,
    null_value_counts: dict[int, int] | None,
    nan_value_counts: dict[int, int] | None,
    lower_bounds: dict[int, bytes] | None,
    upper_bounds: dict[int, bytes] | None,
    key_metadata: bytes | None,
    split_offsets: list[int] | None,
    equality_ids: list[int] | None,
    sort_order_id: int | None,
    first_row_id: int | None,
    referenced_data_file: str | None,
    content_offset: int | None,
    content_size_in_bytes: int | None,
) -> ManifestEntry:
    """An entry of a record's fields (the order of ``avro_decoder.ENTRY_FIELDS`` and
    ``DATA_FILE_FIELDS``; stats maps as ``{field id: value}``), inheritance applied."""
    status = _STATUS[status_code]
    if snapshot_id is None:
        snapshot_id = manifest.added_snapshot_id
    if seq is None or file_seq is None:
        inherited = manifest.sequence_number
        if status != Status.ADDED and inherited != 0:
            raise CorruptMetadata(
                f"{manifest.manifest_path}: {status.name} entry {file_path} has no sequence number"
            )
        if inherited != UNASSIGNED_SEQ:
            seq = inherited if seq is None else seq
            file_seq = inherited if file_seq is None else file_seq
    data_file = DataFile(
        file_path,
        file_format,
        read_partition(partition),
        record_count,
        file_size_in_bytes,
        manifest.partition_spec_id,
        _CONTENT[content],
        column_sizes,
        value_counts,
        null_value_counts,
        nan_value_counts,
        lower_bounds,
        upper_bounds,
        key_metadata,
        None if split_offsets is None else tuple(split_offsets),
        None if equality_ids is None else tuple(equality_ids),
        sort_order_id,
        first_row_id,
        referenced_data_file,
        content_offset,
        content_size_in_bytes,
    )
    return ManifestEntry(status, data_file, snapshot_id, seq, file_seq)
