"""A straightforward reference planner for the planning tests: every manifest of the snapshot
decoded whole with ``read_manifest`` (no cache, no blocks), each entry filtered on its own, and
the delete files that apply to each data file found by the spec's "Scan Planning" rules written
out again here (not through :class:`~lakecat.metadata.manifests.delete_index.DeleteIndex`).
And the check that lakecat's compiled manifest decoder reads a file as fastavro does
(:func:`assert_decoders_agree`). And lakecat's own plans of a scan, through no cache and then
twice through one (:func:`lakecat_plans`)."""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro

from lakecat.catalog import Table
from lakecat.catalog.read.planning import ScanPlan
from lakecat.catalog.read.scan import Scan, to_expression
from lakecat.metadata.expressions.evaluators import InclusiveMetricsEvaluator, PartitionEvaluator
from lakecat.metadata.expressions.expressions import bind
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.manifests.avro_decoder import (
    DATA_FILE_FIELDS,
    ENTRY_FIELDS,
    decode_entries,
    decode_records,
    split_records,
)
from lakecat.metadata.manifests.cache import ManifestCache
from lakecat.metadata.manifests.datafile import (
    Content,
    DataFile,
    ManifestContent,
    Status,
)
from lakecat.metadata.manifests.delete_index import POS_FILE_PATH_ID
from lakecat.metadata.manifests.manifest import _map, read_manifest, read_manifest_list
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.snapshots import Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata


def lakecat_plans(
    t: Table,
    snapshot: Snapshot,
    schema: Schema,
    row_filter: str | None,
    cache: ManifestCache,
    columns: Sequence[str] | None = None,
) -> Iterator[ScanPlan]:
    """lakecat's plans of one scan: with no manifest cache, then through ``cache`` twice
    (cold the first time the cache meets these manifests, then warm)."""
    for manifests in (None, cache, cache):
        yield Scan(
            t.io,
            t.metadata,
            snapshot,
            schema,
            row_filter=row_filter,
            columns=columns,
            manifest_cache=manifests,
        ).plan()


STATS_MAPS = (
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
)


@dataclass(frozen=True)
class ReferencePlan:
    files: list[DataFile]
    deletes: dict[str, set[tuple[str, int | None]]]  # data file path -> delete file keys
    sequence_numbers: dict[str, int]


def _named(f: DataFile) -> str | None:
    if f.referenced_data_file is not None:
        return f.referenced_data_file
    lower = (f.lower_bounds or {}).get(POS_FILE_PATH_ID)
    upper = (f.upper_bounds or {}).get(POS_FILE_PATH_ID)
    return lower.decode() if lower is not None and lower == upper else None


def _applies(
    d: DataFile, d_seq: int, f: DataFile, f_seq: int, *, global_spec: bool, has_dv: bool
) -> bool:
    same_partition = (d.spec_id, d.partition) == (f.spec_id, f.partition)
    if d.content is Content.EQUALITY_DELETES:
        return d_seq > f_seq and (global_spec or same_partition)
    if d.is_deletion_vector:
        return same_partition and d.referenced_data_file == f.file_path and d_seq >= f_seq
    if has_dv:  # a deletion vector replaces every position delete file of its data file
        return False
    named = _named(d)
    return same_partition and d_seq >= f_seq and (named is None or named == f.file_path)


def reference_plan(
    io: FileIO, metadata: TableMetadata, snapshot: Snapshot, schema: Schema, row_filter: Any
) -> ReferencePlan:
    """The plan of a scan of ``snapshot`` (read with ``schema``) filtered by ``row_filter``."""
    bound = bind(schema, to_expression(row_filter))
    specs = metadata.specs_by_id()
    metrics = InclusiveMetricsEvaluator(schema, bound)
    manifests = read_manifest_list(io, snapshot.manifest_list)
    delete_entries = [
        (e.data_file, e.sequence_number)
        for m in manifests
        if m.content is ManifestContent.DELETES
        for e in read_manifest(io, m, specs=specs, schema=schema)
        if e.status is not Status.DELETED
    ]
    files: list[DataFile] = []
    deletes: dict[str, set[tuple[str, int | None]]] = {}
    sequence_numbers: dict[str, int] = {}
    for m in manifests:
        if m.content is not ManifestContent.DATA:
            continue
        partition = PartitionEvaluator(specs[m.partition_spec_id], schema, bound)
        for e in read_manifest(io, m, specs=specs, schema=schema):
            f = e.data_file
            if e.status is Status.DELETED:
                continue
            if not (partition.eval(f.partition) and metrics.eval(f)):
                continue
            files.append(f)
            seq = e.sequence_number
            assert seq is not None
            sequence_numbers[f.file_path] = seq
            has_dv = any(
                d.is_deletion_vector
                and d.referenced_data_file == f.file_path
                and (d.spec_id, d.partition) == (f.spec_id, f.partition)
                and d_seq is not None
                and d_seq >= seq
                for d, d_seq in delete_entries
            )
            applying = {
                d.key
                for d, d_seq in delete_entries
                if d_seq is not None
                and _applies(
                    d,
                    d_seq,
                    f,
                    seq,
                    global_spec=not specs[d.spec_id].fields,
                    has_dv=has_dv,
                )
            }
            if applying:
                deletes[f.file_path] = applying
    return ReferencePlan(files, deletes, sequence_numbers)


def fastavro_records(data: bytes) -> list[dict[str, Any]]:
    """fastavro's records of a manifest file, stats maps turned into ``{field id: value}``
    dicts: what lakecat's compiled decoder must return for the same bytes."""
    out = []
    for rec in fastavro.reader(io.BytesIO(data)):
        assert isinstance(rec, dict)
        df = dict(rec["data_file"])
        for name in STATS_MAPS:
            if name in df:
                df[name] = _map(df[name])
        out.append({**rec, "data_file": df})
    return out


def assert_decoders_agree(data: bytes) -> int:
    """The compiled decoder reads ``data`` (a manifest file) exactly as fastavro does, and
    its splitter finds each record's status, partition and bytes; the number of records."""
    _, compiled = decode_records(data)
    expected = fastavro_records(data)
    assert compiled == expected
    split = split_records(data)
    assert split.heads == [(r["status"], r["data_file"]["partition"]) for r in expected]
    ends = [*split.starts[1:], len(split.body)][: len(split.starts)]
    for start, end, record in zip(split.starts, ends, expected, strict=True):
        assert split.decode(split.body[start:end]) == [record]
    # the entry decoder hands each record's fields to its maker, stats maps as dicts
    fields = decode_entries(data, lambda _writer_schema: lambda *values: values)
    assert fields == [_entry_fields(r) for r in expected]
    return len(compiled)


def _entry_fields(record: dict[str, Any]) -> tuple[Any, ...]:
    df = record["data_file"]
    entry = tuple(record.get(name) for name in ENTRY_FIELDS)
    return entry + tuple(
        _map(df.get(name)) if name in STATS_MAPS else df.get(name, 0 if name == "content" else None)
        for name in DATA_FILE_FIELDS
    )
