"""A fast decoder for manifest files: Python source compiled from each file's own Avro schema.

Decoding manifest entries is nearly all the cost of planning a table whose manifests lakecat
did not write (lakecat's own partition-ordered manifests let a filtered scan skip most of them,
:mod:`lakecat.metadata.manifests.blocks`; other writers' manifests must be decoded whole).
fastavro's generic reader walks the schema for every value and builds a dict for every record,
including one per key/value pair of the six column-stats maps, which are then turned into the
``{field id: value}`` maps a :class:`~lakecat.metadata.manifests.datafile.DataFile` holds.

This module instead generates, once per distinct writer schema, one straight-line Python
function that decodes every record of a file, reading varints inline and building each stats
map directly as a dict (Iceberg writes maps with int keys as arrays of key/value records, and
some writers use Avro maps with string keys: both become ``{int key: value}`` here). Its output
is otherwise what fastavro returns for the same bytes: records as dicts, a union's value without
its branch, fastavro's own logical-type conversions (``fastavro.read.LOGICAL_READERS``) applied
to annotated primitives (a partition's dates, timestamps, decimals, uuids). On the
pyiceberg-written manifests of ``benchmarks/bench_foreign_planning.py`` it takes about half of
fastavro's CPU time per entry, and the entries built from its records need no map conversion;
compiling a schema costs ~35 ms, once per distinct schema and process.

Where entries are what the caller wants (every plan of a manifest decoded whole, and
:func:`~lakecat.metadata.manifests.manifest.read_manifest`), a third function
(:func:`decode_entries`) hands each record's fields straight to a maker that builds the entry,
skipping fields no entry holds: no record dicts in between. That is about a third less time,
and a third of the container objects, which matters as much: a plan that leaves fewer of them
behind triggers fewer of the interpreter's full garbage collections (on the 10,000-entry
foreign table, one full collection, ~100 ms in a process holding pyiceberg too, was half of a
cold plan).

For scans that filter on partitions it also compiles a splitter (:func:`split_records`): it
decodes each record's ``status`` and ``data_file.partition`` and skips the rest (no values
built, about 2.5x cheaper than decoding), noting where each record starts, so that only the
records of partitions a scan keeps are decoded in full.

Scope, and where fastavro stays the decoder: the container's ``null`` and ``deflate`` codecs
(other codecs, any schema construct this module does not compile, and any file it fails to
decode go to fastavro, which decodes it or reports it as corrupt).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from fastavro.read import LOGICAL_READERS

MAGIC = b"Obj\x01"
SYNC_SIZE = 16

RecordsDecoder = Callable[[bytes], list[dict[str, Any]]]


class Unsupported(Exception):
    """A file or schema this module does not decode (fastavro does)."""


# ---- the container ------------------------------------------------------------------------


# the value of each one-byte zigzag varint
_ZIGZAG = tuple((b >> 1) ^ -(b & 1) for b in range(128))


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint at ``pos``: (value, position after it)."""
    shift = 0
    acc = 0
    while True:
        b = buf[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if b < 0x80:
            return (acc >> 1) ^ -(acc & 1), pos
        shift += 7


def read_container(data: bytes) -> tuple[dict[str, bytes], bytes, int]:
    """The header metadata of an Avro object container file, the decompressed bytes of all
    its blocks, concatenated (records never straddle blocks, so the result is the file's
    records, one after the other), and the number of records the blocks declare. Raises
    :class:`Unsupported` for codecs other than null and deflate, ``ValueError`` /
    ``IndexError`` / ``zlib.error`` for a damaged file."""
    if data[:4] != MAGIC:
        raise ValueError("not an Avro object container file")
    pos = 4
    meta: dict[str, bytes] = {}
    while True:
        count, pos = _varint(data, pos)
        if count == 0:
            break
        if count < 0:
            count = -count
            _, pos = _varint(data, pos)
        for _ in range(count):
            n, pos = _varint(data, pos)
            key = data[pos : pos + n].decode()
            pos += n
            n, pos = _varint(data, pos)
            meta[key] = data[pos : pos + n]
            pos += n
    sync = data[pos : pos + SYNC_SIZE]
    pos += SYNC_SIZE
    codec = meta.get("avro.codec", b"null").decode()
    if codec not in ("null", "deflate"):
        raise Unsupported(f"codec {codec}")
    deflate = codec == "deflate"
    chunks = []
    end = len(data)
    records = 0
    while pos < end:
        count, pos = _varint(data, pos)
        records += count
        size, pos = _varint(data, pos)
        if size < 0 or pos + size + SYNC_SIZE > end:
            raise ValueError("truncated Avro block")
        block = data[pos : pos + size]
        pos += size
        if data[pos : pos + SYNC_SIZE] != sync:
            raise ValueError("Avro sync marker not found")
        pos += SYNC_SIZE
        chunks.append(zlib.decompress(block, -15) if deflate else block)
    return meta, b"".join(chunks), records


def decode_records(data: bytes) -> tuple[Any, list[dict[str, Any]]]:
    """The writer schema and every record of an Avro container file of manifest entries."""
    meta, body, count = read_container(data)
    schema_text = meta["avro.schema"].decode()
    records = compiled(schema_text)(body)
    if len(records) != count:
        raise ValueError(f"the Avro blocks declare {count} records, not {len(records)}")
    return parsed(schema_text), records


@dataclass(frozen=True)
class SplitRecords:
    """A manifest file's records, located but not decoded: each record's status and partition
    record (as fastavro reads them), where each record starts in ``body`` (the concatenated
    block bodies; a record ends where the next starts, the last at the end of ``body``), and
    the function that decodes records (:func:`compiled`)."""

    writer_schema: Any
    body: bytes
    starts: list[int]
    heads: list[tuple[int, dict[str, Any]]]
    decode: RecordsDecoder


def split_records(data: bytes) -> SplitRecords:
    """The records of an Avro container file of manifest entries, split without decoding more
    than each one's ``status`` and ``data_file.partition`` (the rest of a record is skipped:
    cheaper than decoding it, for scans that keep few partitions). Raises as
    :func:`decode_records` does, and :class:`Unsupported` for a schema without those fields."""
    meta, body, count = read_container(data)
    schema_text = meta["avro.schema"].decode()
    starts, heads = compiled_split(schema_text)(body)
    if len(starts) != count:
        raise ValueError(f"the Avro blocks declare {count} records, not {len(starts)}")
    return SplitRecords(parsed(schema_text), body, starts, heads, compiled(schema_text))


@lru_cache(maxsize=64)
def parsed(schema_text: str) -> Any:
    """An Avro schema's JSON, parsed once (callers only read it)."""
    return json.loads(schema_text)


# ---- compiling a schema to Python ---------------------------------------------------------

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


@lru_cache(maxsize=64)
def compiled(schema_text: str) -> RecordsDecoder:
    """The decoder of the records of files written with this schema (Avro JSON)."""
    return _Compiler(parsed(schema_text)).build()


Splitter = Callable[[bytes], tuple[list[int], list[tuple[int, dict[str, Any]]]]]


@lru_cache(maxsize=64)
def compiled_split(schema_text: str) -> Splitter:
    """The splitter (see :func:`split_records`) of files written with this schema."""
    return _Compiler(parsed(schema_text)).build_split()


# What a manifest entry's maker (:func:`decode_entries`) is given, in this order: the entry's
# fields, then its data file's (None for a field the writer's schema lacks; ``content``: 0).
ENTRY_FIELDS = ("status", "snapshot_id", "sequence_number", "file_sequence_number")
DATA_FILE_FIELDS = (
    "content",
    "file_path",
    "file_format",
    "partition",
    "record_count",
    "file_size_in_bytes",
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
    "key_metadata",
    "split_offsets",
    "equality_ids",
    "sort_order_id",
    "first_row_id",
    "referenced_data_file",
    "content_offset",
    "content_size_in_bytes",
)

EntryMaker = Callable[..., Any]
EntriesDecoder = Callable[[bytes, EntryMaker], list[Any]]


def decode_entries(data: bytes, maker: Callable[[Any], EntryMaker]) -> list[Any]:
    """Every record of an Avro container file of manifest entries, each turned by the maker
    that ``maker(writer_schema)`` returns into what it makes of the record's fields
    (:data:`ENTRY_FIELDS`, then :data:`DATA_FILE_FIELDS`, values as :func:`decode_records`
    gives them), straight from the bytes: no record dicts in between, and fields no entry
    holds are skipped. Raises as :func:`decode_records` does (and whatever the maker raises)."""
    meta, body, count = read_container(data)
    schema_text = meta["avro.schema"].decode()
    made = compiled_entries(schema_text)(body, maker(parsed(schema_text)))
    if len(made) != count:
        raise ValueError(f"the Avro blocks declare {count} records, not {len(made)}")
    return made


@lru_cache(maxsize=64)
def compiled_entries(schema_text: str) -> EntriesDecoder:
    """The entry decoder (see :func:`decode_entries`) of files written with this schema."""
    return _Compiler(parsed(schema_text)).build_entries()


class _Compiler:
    """Writes the source of one function ``decode(buf)`` that returns every record of
    ``buf`` (concatenated block bodies) as fastavro would, stats maps as dicts."""

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        self.lines: list[str] = []
        self.names: dict[str, Any] = {}
        self.constants: dict[str, Any] = {}
        self.counter = 0

    def build(self) -> RecordsDecoder:
        self.lines = [
            "def decode(buf):",
            "    pos = 0",
            "    end = len(buf)",
            "    out = []",
            "    append = out.append",
            "    while pos < end:",
        ]
        value = self.value(self.schema, 2)
        self.emit(2, f"append({value})")
        self.emit(1, "return out")
        decode: RecordsDecoder = self.function("decode", "<lakecat manifest decoder>")
        return decode

    def function(self, name: str, filename: str) -> Any:
        """The function ``name`` that ``self.lines`` define."""
        namespace: dict[str, Any] = {
            "_varint": _varint,
            "_zigzag": _ZIGZAG,
            "_unpack_float": struct.Struct("<f").unpack_from,
            "_unpack_double": struct.Struct("<d").unpack_from,
            **self.constants,
        }
        exec(compile("\n".join(self.lines), filename, "exec"), namespace)
        return namespace[name]

    def build_split(self) -> Splitter:
        """``split(buf)``: where each record starts, and its status and partition record."""
        top = self.schema
        if not isinstance(top, dict) or top.get("type") != "record":
            raise Unsupported("a manifest entry is a record")
        names = [f.get("name") for f in top.get("fields", ())]
        data_file = next((f["type"] for f in top["fields"] if f["name"] == "data_file"), None)
        if "status" not in names or not isinstance(data_file, dict):
            raise Unsupported("no status or data_file record")
        if "partition" not in [f.get("name") for f in data_file.get("fields", ())]:
            raise Unsupported("no data_file.partition")
        self.lines = [
            "def split(buf):",
            "    pos = 0",
            "    end = len(buf)",
            "    starts = []",
            "    heads = []",
            "    while pos < end:",
            "        starts.append(pos)",
        ]
        status = partition = "None"
        for f in top["fields"]:
            if f["name"] == "status":
                status = self.var()
                self.emit(2, f"{status} = {self.value(f['type'], 2)}")
            elif f["name"] == "data_file":
                self.register(data_file)
                for g in data_file["fields"]:
                    if g["name"] == "partition":
                        partition = self.var()
                        self.emit(2, f"{partition} = {self.value(g['type'], 2)}")
                    else:
                        self.skip(g["type"], 2)
            else:
                self.skip(f["type"], 2)
        self.emit(2, f"heads.append(({status}, {partition}))")
        self.emit(1, "if pos != end: raise ValueError('truncated Avro record')")
        self.emit(1, "return starts, heads")
        split: Splitter = self.function("split", "<lakecat manifest splitter>")
        return split

    def build_entries(self) -> EntriesDecoder:
        """``decode(buf, make)``: ``make(*fields)`` of each record (see
        :func:`decode_entries`)."""
        top = self.schema
        if not isinstance(top, dict) or top.get("type") != "record":
            raise Unsupported("a manifest entry is a record")
        data_file = next((f["type"] for f in top["fields"] if f["name"] == "data_file"), None)
        if not isinstance(data_file, dict) or data_file.get("type") != "record":
            raise Unsupported("no data_file record")
        self.lines = [
            "def decode(buf, make):",
            "    pos = 0",
            "    end = len(buf)",
            "    out = []",
            "    append = out.append",
            "    while pos < end:",
        ]
        values: dict[str, str] = {"content": "0"}
        for f in top["fields"]:
            if f["name"] == "data_file":
                self.register(data_file)
                for g in data_file["fields"]:
                    if g["name"] in DATA_FILE_FIELDS:
                        values[g["name"]] = self.held(g["type"], 2)
                    else:
                        self.skip(g["type"], 2)
            elif f["name"] in ENTRY_FIELDS:
                values[f["name"]] = self.held(f["type"], 2)
            else:
                self.skip(f["type"], 2)
        if "status" not in values:
            raise Unsupported("no status")
        args = ", ".join(values.get(name, "None") for name in ENTRY_FIELDS + DATA_FILE_FIELDS)
        self.emit(2, f"append(make({args}))")
        self.emit(1, "if pos != end: raise ValueError('truncated Avro record')")
        self.emit(1, "return out")
        decode: EntriesDecoder = self.function("decode", "<lakecat manifest entry decoder>")
        return decode

    def held(self, schema: Any, indent: int) -> str:
        """A variable holding one value of ``schema``, read now (the fields after it are
        read before it is used)."""
        value = self.value(schema, indent)
        if value.isidentifier():
            return value
        v = self.var()
        self.emit(indent, f"{v} = {value}")
        return v

    def skip_long(self, indent: int) -> None:
        self.emit(indent, "while buf[pos] > 127:")
        self.emit(indent + 1, "pos += 1")
        self.emit(indent, "pos += 1")

    def skip_raw(self, indent: int) -> None:
        n = self.long(indent)
        self.emit(indent, f"if {n} < 0: raise ValueError('negative Avro length')")
        self.emit(indent, f"pos += {n}")

    def skip(self, schema: Any, indent: int) -> None:
        """Emit code that moves ``pos`` past one value of ``schema`` without decoding it."""
        if isinstance(schema, list):
            if len(schema) > 63:
                raise Unsupported("a union of more than 63 branches")
            index = self.var()
            self.emit(indent, f"{index} = buf[pos]")
            self.emit(indent, "pos += 1")
            for i, branch in enumerate(schema):
                self.emit(indent, f"{'if' if i == 0 else 'elif'} {index} == {2 * i}:")
                self.emit(indent + 1, "pass")
                self.skip(branch, indent + 1)
            self.emit(indent, "else:")
            self.emit(indent + 1, "raise ValueError('union branch out of range')")
            return
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                self.skip_primitive(schema, indent)
                return
            named = self.names.get(schema)
            if named is None:
                raise Unsupported(f"unknown named type {schema}")
            self.skip(named, indent)
            return
        if not isinstance(schema, dict):
            raise Unsupported(f"schema {schema!r}")
        kind = schema.get("type")
        if kind == "record":
            self.register(schema)
            for f in schema.get("fields", ()):
                self.skip(f["type"], indent)
        elif kind in ("array", "map"):
            if kind == "array" and isinstance(schema.get("items"), dict):
                self.register_nested(schema["items"])
            self.emit(indent, "while True:")
            n = self.long(indent + 1)
            self.emit(indent + 1, f"if {n} == 0: break")
            self.emit(indent + 1, f"if {n} < 0:")  # a block that says its size: jump over it
            size = self.long(indent + 2)
            self.emit(indent + 2, f"pos += {size}")
            self.emit(indent + 2, "continue")
            item = self.var()
            self.emit(indent + 1, f"for {item} in range({n}):")
            self.emit(indent + 2, "pass")
            if kind == "map":
                self.skip_raw(indent + 2)
                self.skip(schema["values"], indent + 2)
            else:
                self.skip(schema["items"], indent + 2)
        elif kind == "fixed":
            self.register(schema)
            self.emit(indent, f"pos += {int(schema['size'])}")
        elif kind == "enum":
            self.register(schema)
            self.skip_long(indent)
        elif kind in _PRIMITIVES:
            self.skip_primitive(kind, indent)
        elif isinstance(kind, (dict, list, str)):
            self.skip(kind, indent)
        else:
            raise Unsupported(f"schema {schema!r}")

    def register_nested(self, schema: dict[str, Any]) -> None:
        if schema.get("type") in ("record", "fixed", "enum"):
            self.register(schema)

    def skip_primitive(self, kind: str, indent: int) -> None:
        if kind == "null":
            return
        if kind in ("int", "long"):
            self.skip_long(indent)
        elif kind == "boolean":
            self.emit(indent, "pos += 1")
        elif kind == "float":
            self.emit(indent, "pos += 4")
        elif kind == "double":
            self.emit(indent, "pos += 8")
        else:  # bytes, string
            self.skip_raw(indent)

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def var(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def constant(self, value: Any) -> str:
        name = self.var("c")
        self.constants[name] = value
        return name

    def long(self, indent: int) -> str:
        """Inline read of one zigzag varint; the name of the variable holding it."""
        v = self.var()
        self.emit(indent, f"{v} = buf[pos]")
        self.emit(indent, "pos += 1")
        # one byte (most counts, keys, lengths): its value looked up
        self.emit(indent, f"if {v} < 128: {v} = _zigzag[{v}]")
        self.emit(indent, "else:")  # more bytes follow (no call: calls are slow)
        self.emit(indent + 1, f"{v} &= 127")
        self.emit(indent + 1, "shift = 7")
        self.emit(indent + 1, "while True:")
        self.emit(indent + 2, "b = buf[pos]")
        self.emit(indent + 2, "pos += 1")
        self.emit(indent + 2, f"{v} |= (b & 127) << shift")
        self.emit(indent + 2, "if b < 128: break")
        self.emit(indent + 2, "shift += 7")
        self.emit(indent + 1, f"{v} = ({v} >> 1) ^ -({v} & 1)")
        return v

    def raw(self, indent: int) -> str:
        """Inline read of length-prefixed bytes."""
        n = self.long(indent)
        v = self.var()
        self.emit(indent, f"{v} = buf[pos:pos + {n}]")
        self.emit(indent, f"pos += {n}")
        self.emit(indent, f"if {n} < 0 or pos > end: raise ValueError('truncated Avro value')")
        return v

    def value(self, schema: Any, indent: int) -> str:
        """Emit code reading one value of ``schema``; return an expression for it."""
        if isinstance(schema, list):
            return self.union(schema, indent)
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                return self.primitive(schema, indent)
            named = self.names.get(schema)
            if named is None:
                raise Unsupported(f"unknown named type {schema}")
            return self.value(named, indent)
        if not isinstance(schema, dict):
            raise Unsupported(f"schema {schema!r}")
        kind = schema.get("type")
        if kind == "record":
            self.register(schema)
            return self.record(schema, indent)
        if kind == "array":
            if _is_key_value(schema.get("items"), self.names):
                return self.key_value_map(schema["items"], indent)
            return self.array(schema, indent)
        if kind == "map":
            return self.avro_map(schema, indent)
        if kind == "fixed":
            self.register(schema)
            v = self.var()
            size = int(schema["size"])
            self.emit(indent, f"{v} = buf[pos:pos + {size}]")
            self.emit(indent, f"pos += {size}")
            return self.logical(schema, v, indent)
        if kind == "enum":
            self.register(schema)
            symbols = self.constant(tuple(schema["symbols"]))
            index = self.long(indent)
            return f"{symbols}[{index}]"
        if kind in _PRIMITIVES:
            return self.logical(schema, self.primitive(kind, indent), indent)
        if isinstance(kind, (dict, list, str)):
            return self.value(kind, indent)
        raise Unsupported(f"schema {schema!r}")

    def register(self, schema: dict[str, Any]) -> None:
        name = schema.get("name")
        if not name:
            return
        namespace = schema.get("namespace")
        self.names[name] = schema
        if namespace and "." not in name:
            self.names[f"{namespace}.{name}"] = schema
        if "." in name:
            self.names[name.rsplit(".", 1)[1]] = schema

    def logical(self, schema: dict[str, Any], expr: str, indent: int) -> str:
        logical = schema.get("logicalType")
        if logical is None:
            return expr
        reader = LOGICAL_READERS.get(f"{schema['type']}-{logical}")
        if reader is None:
            return expr  # fastavro ignores logical types it does not know
        fn = self.constant(reader)
        spec = self.constant(schema)
        v = self.var()
        self.emit(indent, f"{v} = {fn}({expr}, {spec}, None)")
        return v

    def primitive(self, kind: str, indent: int) -> str:
        if kind == "null":
            return "None"
        if kind in ("int", "long"):
            return self.long(indent)
        if kind == "boolean":
            v = self.var()
            self.emit(indent, f"{v} = buf[pos] != 0")
            self.emit(indent, "pos += 1")
            return v
        if kind in ("float", "double"):
            v = self.var()
            size = 4 if kind == "float" else 8
            self.emit(indent, f"{v} = _unpack_{kind}(buf, pos)[0]")
            self.emit(indent, f"pos += {size}")
            return v
        if kind == "bytes":
            return self.raw(indent)
        if kind == "string":
            return f"{self.raw(indent)}.decode()"
        raise Unsupported(kind)

    def union(self, branches: list[Any], indent: int) -> str:
        if len(branches) > 63:
            raise Unsupported("a union of more than 63 branches")
        v = self.var()
        index = self.var()
        # branch i < 64 is the one byte 2 * i (a zigzag varint)
        self.emit(indent, f"{index} = buf[pos]")
        self.emit(indent, "pos += 1")
        for i, branch in enumerate(branches):
            self.emit(indent, f"{'if' if i == 0 else 'elif'} {index} == {2 * i}:")
            if branch == "null":
                self.emit(indent + 1, f"{v} = None")
                continue
            value = self.value(branch, indent + 1)
            self.emit(indent + 1, f"{v} = {value}")
        self.emit(indent, "else:")
        self.emit(indent + 1, "raise ValueError('union branch out of range')")
        return v

    def record(self, schema: dict[str, Any], indent: int) -> str:
        parts = []
        for f in schema.get("fields", ()):
            value = self.value(f["type"], indent)
            parts.append(f"{str(f['name'])!r}: {value}")
        v = self.var()
        self.emit(indent, f"{v} = {{{', '.join(parts)}}}")
        return v

    def blocks(self, indent: int) -> tuple[str, int]:
        """Open a loop over an array's or map's blocks; return the item count variable and
        the indent of the per-item body."""
        count = self.var()
        self.emit(indent, "while True:")
        n = self.long(indent + 1)
        self.emit(indent + 1, f"if {n} == 0: break")
        self.emit(indent + 1, f"if {n} < 0:")
        self.emit(indent + 2, f"{n} = -{n}")
        self.emit(indent + 2, "_, pos = _varint(buf, pos)")
        self.emit(indent + 1, f"for {count} in range({n}):")
        return count, indent + 2

    def array(self, schema: dict[str, Any], indent: int) -> str:
        v = self.var()
        self.emit(indent, f"{v} = []")
        _, body = self.blocks(indent)
        item = self.value(schema["items"], body)
        self.emit(body, f"{v}.append({item})")
        return v

    def key_value_map(self, items: Any, indent: int) -> str:
        record = self.names.get(items) if isinstance(items, str) else items
        assert isinstance(record, dict)
        self.register(record)
        fields = {f["name"]: f["type"] for f in record["fields"]}
        v = self.var()
        self.emit(indent, f"{v} = {{}}")
        _, body = self.blocks(indent)
        for name in (f["name"] for f in record["fields"]):  # in the order they are written
            if name == "key":
                key = self.value(fields["key"], body)
                k = self.var()
                self.emit(body, f"{k} = {key}")
            else:
                value = self.value(fields["value"], body)
                val = self.var()
                self.emit(body, f"{val} = {value}")
        self.emit(body, f"{v}[{k}] = {val}")
        return v

    def avro_map(self, schema: dict[str, Any], indent: int) -> str:
        v = self.var()
        self.emit(indent, f"{v} = {{}}")
        _, body = self.blocks(indent)
        key = self.raw(body)
        value = self.value(schema["values"], body)
        self.emit(body, f"{v}[int({key}.decode())] = {value}")
        return v


def _is_key_value(items: Any, names: dict[str, Any]) -> bool:
    """An array of records of exactly the fields ``key`` and ``value``: how Iceberg writes a
    map with non-string keys."""
    record = names.get(items) if isinstance(items, str) else items
    if not isinstance(record, dict) or record.get("type") != "record":
        return False
    return sorted(f.get("name") for f in record.get("fields", ())) == ["key", "value"]
