"""metadata.json: the JSON shape (golden files, compared as parsed structures), round trips
(hypothesis), interop with pyiceberg both ways, and the metadata-file helpers."""

from __future__ import annotations

import dataclasses
import gzip
import itertools
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.partitioning import PartitionField as PyPartitionField
from pyiceberg.partitioning import PartitionSpec as PyPartitionSpec
from pyiceberg.schema import Schema as PySchema
from pyiceberg.serializers import ToOutputFile
from pyiceberg.table.metadata import TableMetadataUtil
from pyiceberg.table.metadata import new_table_metadata as py_new_table_metadata
from pyiceberg.table.snapshots import Operation, Summary
from pyiceberg.table.snapshots import Snapshot as PySnapshot
from pyiceberg.table.sorting import SortField as PySortField
from pyiceberg.table.sorting import SortOrder as PySortOrder
from pyiceberg.table.update import AddSnapshotUpdate, SetSnapshotRefUpdate, update_table_metadata
from pyiceberg.transforms import BucketTransform, DayTransform
from pyiceberg.types import DoubleType as PyDoubleType
from pyiceberg.types import LongType as PyLongType
from pyiceberg.types import NestedField as PyNestedField
from pyiceberg.types import StructType as PyStructType
from pyiceberg.types import TimestamptzType as PyTimestamptzType

from lakecat.metadata.errors import CorruptMetadata, UnsupportedFeature, ValidationError
from lakecat.metadata.io.fileio import FileExistsStorageError, LocalFileIO
from lakecat.metadata.partitioning.spec import PartitionField, PartitionSpec
from lakecat.metadata.properties import RESERVED
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from lakecat.metadata.table import metadata_json as metadata_json
from lakecat.metadata.table.metadata_files import (
    metadata_file_name,
    new_metadata_location,
    parse_metadata,
    parse_version,
    read_metadata,
    write_metadata,
)
from lakecat.metadata.table.metadata_json import serialize_metadata
from lakecat.metadata.table.schema_evolution import assign_fresh_ids
from lakecat.metadata.table.snapshots import (
    OPERATIONS,
    MetadataLogEntry,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
)
from lakecat.metadata.table.sorting import SortField, SortOrder
from lakecat.metadata.table.table_metadata import TableMetadata

GOLDEN = Path(__file__).parent / "golden"


def _golden(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((GOLDEN / name).read_text())
    return loaded


# ---- golden files ----------------------------------------------------------------------------
def test_golden_v2_file_is_read_as_the_spec_says() -> None:
    m = TableMetadata.from_json(_golden("v2_full.metadata.json"))
    assert m.table_uuid == "9c12d441-03fe-4693-9a96-a0705ddf69c1"
    assert m.schema().find_field("location.lat").field_type == DoubleType()
    tags = m.schema().find_field("tags").field_type
    assert tags == MapType(8, StringType(), 9, ListType(10, FixedType(16), False), True)
    assert m.schema(0).find_field("amount") == NestedField(
        3, "amount", DecimalType(9, 2), doc="in EUR"
    )
    assert m.spec().fields[1] == PartitionField(1, 1001, "bucket[16]", "id_bucket")
    assert m.sort_order().fields[1] == SortField(1, "bucket[4]", "desc", "nulls-last")
    assert m.current_snapshot_id == 3051729675574597004
    assert m.refs["audit"] == SnapshotRef(
        3055729675574597004, "branch", min_snapshots_to_keep=2, max_snapshot_age_ms=86400000
    )
    assert m.refs["v1"].ref_type == "tag"
    first, second = m.snapshots
    assert first.parent_snapshot_id is None and second.parent_snapshot_id == first.snapshot_id
    assert second.operation == "overwrite"
    assert second.summary == {"deleted-records": "4", "total-records": "6"}
    assert m.statistics[0]["blob-metadata"][0]["fields"] == [1]
    assert len(m.partition_statistics) == 1
    assert m.snapshot_log[-1] == SnapshotLogEntry(1700000200000, second.snapshot_id)
    assert m.metadata_log[0].timestamp_ms == 1700000000000


@pytest.mark.parametrize("name", ["v2_full.metadata.json", "v2_java_style_empty.metadata.json"])
def test_golden_files_are_written_back_in_exactly_their_shape(name: str) -> None:
    golden = _golden(name)
    written = orjson.loads(orjson.dumps(TableMetadata.from_json(golden).to_json()))
    assert written == golden


def test_a_table_without_snapshots_is_written_with_current_snapshot_id_minus_one() -> None:
    m = TableMetadata.from_json(_golden("v2_java_style_empty.metadata.json"))
    assert m.current_snapshot_id is None and m.refs == {}
    assert m.to_json()["current-snapshot-id"] == -1
    assert TableMetadataUtil.parse_raw(orjson.dumps(m.to_json())).current_snapshot_id is None


def test_metadata_without_refs_gets_a_main_branch_at_the_current_snapshot() -> None:
    m = TableMetadata.from_json(_golden("v2_without_refs.metadata.json"))
    assert m.refs == {"main": SnapshotRef(42, "branch")}
    assert m.statistics == () and m.metadata_log == ()
    assert m.snapshots[0].schema_id is None
    assert "schema-id" not in m.to_json()["snapshots"][0]
    assert "parent-snapshot-id" not in m.to_json()["snapshots"][0]


def test_golden_files_are_valid_for_pyiceberg() -> None:
    for name in ("v2_full.metadata.json", "v2_java_style_empty.metadata.json"):
        py = TableMetadataUtil.parse_raw((GOLDEN / name).read_bytes())
        assert str(py.table_uuid) == _golden(name)["table-uuid"]


def test_a_metadata_file_written_by_pyiceberg_is_read_by_lakecat(tmp_path: Path) -> None:
    schema = PySchema(
        PyNestedField(1, "id", PyLongType(), required=True),
        PyNestedField(2, "loc", PyStructType(PyNestedField(3, "lat", PyDoubleType()))),
        PyNestedField(4, "ts", PyTimestamptzType()),
        identifier_field_ids=[1],
    )
    spec = PyPartitionSpec(
        PyPartitionField(4, 1000, DayTransform(), "ts_day"),
        PyPartitionField(1, 1001, BucketTransform(8), "id_bucket"),
    )
    py = py_new_table_metadata(
        schema, spec, PySortOrder(PySortField(1)), "s3://b/t", {"owner": "me"}
    )
    snapshot = PySnapshot(
        snapshot_id=7,
        sequence_number=1,
        timestamp_ms=1_700_000_000_000,
        manifest_list="s3://b/t/metadata/snap-7.avro",
        summary=Summary(Operation.APPEND, **{"added-records": "3"}),
        schema_id=0,
    )
    py = update_table_metadata(
        py,
        (
            AddSnapshotUpdate(snapshot=snapshot),
            SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=7),
        ),
    )
    location = str(tmp_path / "00001-abc.metadata.json")
    ToOutputFile.table_metadata(py, PyArrowFileIO().new_output(location))

    m = read_metadata(LocalFileIO(), location)
    written_by_pyiceberg = json.loads(Path(location).read_bytes())
    # Same parsed structure: lakecat writes every key pyiceberg wrote, with the same values.
    assert orjson.loads(orjson.dumps(m.to_json())) == written_by_pyiceberg
    # pyiceberg assigned fresh ids the way lakecat's new_table does (Java's order).
    assert m.schema().find_field("loc.lat").field_id == 4
    assert m.current_snapshot.operation == "append"  # type: ignore[union-attr]


# ---- random metadata: round trip and pyiceberg interop -----------------------------------------
_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)
_primitives: st.SearchStrategy[PrimitiveType] = st.one_of(
    st.sampled_from(
        [
            BooleanType(),
            IntegerType(),
            LongType(),
            FloatType(),
            DoubleType(),
            DateType(),
            TimeType(),
            TimestampType(),
            TimestamptzType(),
            StringType(),
            UUIDType(),
            BinaryType(),
        ]
    ),
    st.builds(FixedType, st.integers(1, 64)),
    st.integers(1, 38).flatmap(lambda p: st.builds(DecimalType, st.just(p), st.integers(0, p))),
)


def _fields(children: st.SearchStrategy[IcebergType]) -> st.SearchStrategy[tuple[NestedField, ...]]:
    field = st.builds(
        NestedField,
        field_id=st.just(0),
        name=_text,
        field_type=children,
        required=st.booleans(),
        doc=st.none() | _text,
    )
    return st.lists(field, min_size=1, max_size=4, unique_by=lambda f: f.name).map(tuple)


_types: st.SearchStrategy[IcebergType] = st.recursive(
    _primitives,
    lambda children: st.one_of(
        _fields(children).map(StructType),
        st.builds(ListType, st.just(0), children, st.booleans()),
        st.builds(MapType, st.just(0), _primitives, st.just(0), children, st.booleans()),
    ),
    max_leaves=6,
)
_ids = st.integers(1, 2**63 - 1)


def _transforms_for(t: IcebergType) -> list[str]:
    out = ["identity", "void"]
    if isinstance(t, IntegerType | LongType | StringType | DecimalType | DateType | UUIDType):
        out.append("bucket[16]")
    if isinstance(t, IntegerType | LongType | StringType):
        out.append("truncate[4]")
    if isinstance(t, DateType | TimestampType | TimestamptzType):
        out += ["year", "month", "day"]
    if isinstance(t, TimestampType | TimestamptzType):
        out.append("hour")
    return out


@st.composite
def table_metadata(draw: st.DrawFn) -> TableMetadata:
    """Random, internally consistent v2 metadata (what pyiceberg accepts too)."""
    counter = itertools.count(1)
    schemas = []
    for schema_id in range(draw(st.integers(1, 3))):
        struct = assign_fresh_ids(StructType(draw(_fields(_types))), lambda: next(counter))
        assert isinstance(struct, StructType)
        candidates = [
            f.field_id
            for f in struct.fields
            if f.required
            and f.field_type.is_primitive
            and not isinstance(f.field_type, FloatType | DoubleType)
        ]
        identifier = (
            tuple(draw(st.lists(st.sampled_from(candidates), unique=True))) if candidates else ()
        )
        schemas.append(Schema(struct.fields, schema_id, identifier))
    last_column_id = next(counter) - 1
    current = draw(st.sampled_from(schemas))

    columns = [f for f in current.fields if f.field_type.is_primitive]
    partition_id = itertools.count(1000)
    specs = []
    for spec_id in range(draw(st.integers(1, 3))):
        fields = []
        for i, column in enumerate(
            draw(st.lists(st.sampled_from(columns), max_size=3)) if columns else []
        ):
            transform = draw(st.sampled_from(_transforms_for(column.field_type)))
            fields.append(PartitionField(column.field_id, next(partition_id), transform, f"p{i}"))
        specs.append(PartitionSpec(spec_id, tuple(fields)))
    orders = [SortOrder(0, ())]
    if columns:
        for order_id in range(1, draw(st.integers(1, 3))):
            sort_fields = draw(
                st.lists(
                    st.builds(
                        SortField,
                        st.sampled_from([c.field_id for c in columns]),
                        st.just("identity"),
                        st.sampled_from(["asc", "desc"]),
                        st.sampled_from(["nulls-first", "nulls-last"]),
                    ),
                    min_size=1,
                    max_size=3,
                )
            )
            orders.append(SortOrder(order_id, tuple(sort_fields)))

    snapshot_ids = draw(st.lists(_ids, max_size=6, unique=True))
    snapshots = []
    timestamp = draw(st.integers(0, 2**41))
    for seq, snapshot_id in enumerate(snapshot_ids, start=1):
        timestamp += draw(st.integers(0, 10**6))
        known_parents = [s.snapshot_id for s in snapshots]
        parent = draw(st.none() | st.sampled_from(known_parents) | _ids) if known_parents else None
        snapshots.append(
            Snapshot(
                snapshot_id=snapshot_id,
                sequence_number=seq,
                timestamp_ms=timestamp,
                manifest_list=draw(_text),
                operation=draw(st.sampled_from(OPERATIONS)),
                summary=draw(
                    st.dictionaries(_text.filter(lambda k: k != "operation"), _text, max_size=4)
                ),
                parent_snapshot_id=parent,
                schema_id=draw(st.none() | st.sampled_from([s.schema_id for s in schemas])),
            )
        )
    refs: dict[str, SnapshotRef] = {}
    if snapshot_ids:
        if draw(st.booleans()):
            refs["main"] = SnapshotRef(draw(st.sampled_from(snapshot_ids)), "branch")
        for name in draw(st.lists(_text.filter(lambda n: n != "main"), max_size=3, unique=True)):
            is_branch = draw(st.booleans())
            # Snapshot retention is for branches only (spec: "Snapshot References").
            retention = st.none() | st.integers(1, 2**40) if is_branch else st.none()
            refs[name] = SnapshotRef(
                draw(st.sampled_from(snapshot_ids)),
                "branch" if is_branch else "tag",
                min_snapshots_to_keep=draw(retention),
                max_snapshot_age_ms=draw(retention),
                max_ref_age_ms=draw(st.none() | st.integers(1, 2**40)),
            )
    statistics = (
        [
            {
                "snapshot-id": snapshot_id,
                "statistics-path": draw(_text),
                "file-size-in-bytes": draw(st.integers(1, 2**40)),
                "file-footer-size-in-bytes": draw(st.integers(1, 2**20)),
                "blob-metadata": [
                    {
                        "type": "apache-datasketches-theta-v1",
                        "snapshot-id": snapshot_id,
                        "sequence-number": 1,
                        "fields": [1],
                        "properties": {"ndv": "1"},
                    }
                ],
            }
            for snapshot_id in draw(
                st.lists(st.sampled_from(snapshot_ids), unique=True, max_size=2)
            )
        ]
        if snapshot_ids
        else []
    )
    partition_statistics = [
        {"snapshot-id": s, "statistics-path": draw(_text), "file-size-in-bytes": 1}
        for s in (snapshot_ids[:1] if snapshot_ids and draw(st.booleans()) else [])
    ]
    main = refs.get("main")
    return TableMetadata(
        location=draw(_text),
        table_uuid=str(draw(st.uuids())),
        last_updated_ms=timestamp + draw(st.integers(0, 1000)),
        last_column_id=last_column_id + draw(st.integers(0, 3)),
        schemas=tuple(schemas),
        current_schema_id=current.schema_id,
        partition_specs=tuple(specs),
        default_spec_id=draw(st.sampled_from(specs)).spec_id,
        last_partition_id=max(s.last_assigned_field_id for s in specs),
        sort_orders=tuple(orders),
        default_sort_order_id=draw(st.sampled_from(orders)).order_id,
        last_sequence_number=len(snapshots) + draw(st.integers(0, 3)),
        properties=draw(
            st.dictionaries(_text.filter(lambda k: k not in RESERVED), _text, max_size=4)
        ),
        current_snapshot_id=main.snapshot_id if main is not None else None,
        snapshots=tuple(snapshots),
        snapshot_log=tuple(
            SnapshotLogEntry(s.timestamp_ms, s.snapshot_id)
            for s in snapshots
            if draw(st.booleans())
        ),
        metadata_log=tuple(
            MetadataLogEntry(draw(st.integers(0, 2**41)), draw(_text))
            for _ in range(draw(st.integers(0, 3)))
        ),
        refs=refs,
        statistics=tuple(statistics),
        partition_statistics=tuple(partition_statistics),
    )


_SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(table_metadata())
def test_random_metadata_round_trips_and_pyiceberg_reads_it_the_same(m: TableMetadata) -> None:
    # One test for both properties: generating the metadata is the expensive part.
    written = orjson.dumps(m.to_json())
    assert TableMetadata.from_json(orjson.loads(written)) == m
    py = TableMetadataUtil.parse_raw(written)
    assert py.format_version == 2
    assert str(py.table_uuid) == m.table_uuid
    assert (py.location, py.last_updated_ms, py.last_column_id) == (
        m.location,
        m.last_updated_ms,
        m.last_column_id,
    )
    assert py.last_sequence_number == m.last_sequence_number
    assert (py.current_schema_id, py.default_spec_id, py.default_sort_order_id) == (
        m.current_schema_id,
        m.default_spec_id,
        m.default_sort_order_id,
    )
    assert py.last_partition_id == m.last_partition_id
    assert py.properties == m.properties
    assert py.current_snapshot_id == m.current_snapshot_id
    assert {name: (r.snapshot_id, r.snapshot_ref_type.value) for name, r in py.refs.items()} == {
        name: (r.snapshot_id, r.ref_type) for name, r in m.refs.items()
    }
    assert [
        (s.snapshot_id, s.parent_snapshot_id, s.sequence_number, s.schema_id) for s in py.snapshots
    ] == [
        (s.snapshot_id, s.parent_snapshot_id, s.sequence_number, s.schema_id) for s in m.snapshots
    ]
    assert [s.summary.operation.value for s in py.snapshots if s.summary] == [
        s.operation for s in m.snapshots
    ]
    assert [(e.snapshot_id, e.timestamp_ms) for e in py.snapshot_log] == [
        (e.snapshot_id, e.timestamp_ms) for e in m.snapshot_log
    ]
    assert len(py.statistics) == len(m.statistics)
    # What pyiceberg writes back, lakecat reads as the same metadata (schemas, specs, orders
    # and snapshots included): the two agree on every field.
    assert TableMetadata.from_json(json.loads(py.model_dump_json())) == m


# ---- metadata files ----------------------------------------------------------------------------
def _metadata() -> TableMetadata:
    return TableMetadata.from_json(_golden("v2_full.metadata.json"))


def test_metadata_file_names_carry_the_version_and_codec() -> None:
    name = metadata_file_name(7)
    assert name.startswith("00007-") and name.endswith(".metadata.json")
    assert metadata_file_name(7, codec="gzip").endswith(".gz.metadata.json")
    assert metadata_file_name(7) != metadata_file_name(7)
    with pytest.raises(ValidationError, match="codec"):
        metadata_file_name(1, codec="lz4")


@pytest.mark.parametrize(
    ("location", "version"),
    [
        ("s3://b/t/metadata/00012-1b7d5a4e.metadata.json", 12),
        ("00000-x.gz.metadata.json", 0),
        ("/t/metadata/123456-x.metadata.json.gz", 123456),
        ("s3://b/t/metadata/v3.metadata.json", -1),
        ("s3://b/t/metadata/abc-x.metadata.json", -1),
        ("s3://b/00001-x/metadata/foo.json", -1),
    ],
)
def test_parse_version_reads_the_number_before_the_dash(location: str, version: int) -> None:
    assert parse_version(location) == version


def test_new_metadata_locations_increase_the_version() -> None:
    first = new_metadata_location("s3://b/t/", None, {})
    assert first.startswith("s3://b/t/metadata/00000-")
    second = new_metadata_location("s3://b/t", first, {})
    third = new_metadata_location("s3://b/t", second, {"write.metadata.compression-codec": "gzip"})
    assert [parse_version(x) for x in (first, second, third)] == [0, 1, 2]
    assert third.endswith(".gz.metadata.json")
    elsewhere = new_metadata_location("s3://b/t", third, {"write.metadata.path": "s3://m/x/"})
    assert elsewhere.startswith("s3://m/x/00003-")


def test_write_then_read_gives_back_the_metadata(tmp_path: Path) -> None:
    io = LocalFileIO()
    location = str(tmp_path / metadata_file_name(1))
    write_metadata(io, location, _metadata())
    assert read_metadata(io, location) == _metadata()


def test_gzip_metadata_round_trips_and_is_really_gzip(tmp_path: Path) -> None:
    io = LocalFileIO()
    location = str(tmp_path / metadata_file_name(1, codec="gzip"))
    write_metadata(io, location, _metadata())
    raw = Path(location).read_bytes()
    assert json.loads(gzip.decompress(raw))["table-uuid"] == _metadata().table_uuid
    assert read_metadata(io, location) == _metadata()
    # pyiceberg reads our gzip file too.
    from pyiceberg.serializers import FromInputFile

    assert FromInputFile.table_metadata(PyArrowFileIO().new_input(location)).last_column_id == 10


def test_write_metadata_never_overwrites_a_file(tmp_path: Path) -> None:
    io = LocalFileIO()
    location = str(tmp_path / "00001-x.metadata.json")
    write_metadata(io, location, _metadata())
    with pytest.raises(FileExistsStorageError):
        write_metadata(
            io, location, TableMetadata.from_json(_golden("v2_java_style_empty.metadata.json"))
        )
    assert read_metadata(io, location) == _metadata()


def test_a_missing_metadata_file_is_corrupt_metadata_naming_it(tmp_path: Path) -> None:
    location = str(tmp_path / "00009-gone.metadata.json")
    with pytest.raises(CorruptMetadata, match=r"00009-gone.metadata.json is missing"):
        read_metadata(LocalFileIO(), location)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "does not hold a JSON object"),
        (b'{"format-version": 2}', "malformed table metadata"),
        (b'{"format-version": 0}', "format version 2"),
        (b"\x1f\x8b\x08garbage", "not valid gzip"),
    ],
)
def test_a_corrupt_metadata_file_is_corrupt_metadata_naming_it(
    tmp_path: Path, content: bytes, message: str
) -> None:
    location = tmp_path / "00001-bad.metadata.json"
    location.write_bytes(content)
    with pytest.raises(CorruptMetadata, match=message) as caught:
        read_metadata(LocalFileIO(), str(location))
    assert str(location) in str(caught.value)


def test_a_format_v1_table_is_an_unsupported_feature_that_says_how_to_upgrade() -> None:
    obj = _golden("v2_full.metadata.json")
    obj["format-version"] = 1
    with pytest.raises(UnsupportedFeature, match=r"format version 1.*'format-version' = '2'"):
        TableMetadata.from_json(obj)


def test_main_and_current_snapshot_id_that_disagree_are_corrupt() -> None:
    obj = _golden("v2_full.metadata.json")
    obj["current-snapshot-id"] = 3055729675574597004
    with pytest.raises(CorruptMetadata, match="differs from branch main"):
        TableMetadata.from_json(obj)


# ---- gzip that resumes from the previous version's compressed snapshots -----------------------
def _with_snapshots(
    base: TableMetadata, count: int, *, first: int = 1, ts: int = 0
) -> TableMetadata:
    snaps = tuple(
        Snapshot(
            snapshot_id=i,
            sequence_number=i,
            timestamp_ms=1_700_000_000_000 + i + ts,
            manifest_list=f"s3://b/t/metadata/snap-{i}.avro",
            operation="append",
            summary={"added-records": str(i)},
            parent_snapshot_id=i - 1 if i > first else None,
        )
        for i in range(first, first + count)
    )
    return dataclasses.replace(
        base,
        snapshots=snaps,
        current_snapshot_id=None,
        refs={},
        snapshot_log=(),
        last_sequence_number=first + count,
    )


def _one_shot_gzip(plain: bytes) -> bytes:
    compressor = zlib.compressobj(metadata_json.GZIP_LEVEL, zlib.DEFLATED, 31)
    return compressor.compress(plain) + compressor.flush()


@pytest.fixture
def empty_gzip_cache() -> Iterator[None]:
    metadata_json._GZIP_CACHE.clear()
    yield
    metadata_json._GZIP_CACHE.clear()


def test_gzip_of_a_grown_table_resumes_and_equals_the_one_shot_stream(
    empty_gzip_cache: None,
) -> None:
    base = _metadata()
    for count in (0, 1, 2, 50, 51, 300):  # each version extends the previous one's snapshots
        version = _with_snapshots(base, count)
        plain = serialize_metadata(version)
        gz = serialize_metadata(version, gzipped=True)
        assert gz == _one_shot_gzip(plain)
        assert parse_metadata(gz) == parse_metadata(plain) == version


def test_gzip_after_expiring_snapshots_compresses_the_new_prefix_afresh(
    empty_gzip_cache: None,
) -> None:
    base = _metadata()
    serialize_metadata(_with_snapshots(base, 40), gzipped=True)
    expired = _with_snapshots(base, 30, first=11)  # snapshots 1-10 expired
    gz = serialize_metadata(expired, gzipped=True)
    assert gz == _one_shot_gzip(serialize_metadata(expired))
    assert parse_metadata(gz) == expired


def test_gzip_never_reuses_a_prefix_whose_snapshot_bytes_differ(empty_gzip_cache: None) -> None:
    """A retried commit may write a snapshot with the same id but other content (a new
    timestamp): the cached prefix must not stand in for it."""
    base = _metadata()
    serialize_metadata(_with_snapshots(base, 5), gzipped=True)
    retried = _with_snapshots(base, 6, ts=7)  # same ids, other timestamps
    gz = serialize_metadata(retried, gzipped=True)
    assert parse_metadata(gz) == retried
    assert parse_metadata(gz).snapshots[0].timestamp_ms == 1_700_000_000_008


def test_gzip_cache_keeps_tables_apart_and_stays_bounded(empty_gzip_cache: None) -> None:
    base = _metadata()
    versions = [
        dataclasses.replace(_with_snapshots(base, 3 + i), table_uuid=f"uuid-{i}") for i in range(20)
    ]
    for version in versions + versions[::-1]:
        gz = serialize_metadata(version, gzipped=True)
        assert parse_metadata(gz) == version
    assert len(metadata_json._GZIP_CACHE._entries) == metadata_json._MAX_TABLES


def test_the_snapshots_come_after_the_table_identity_and_every_key_survives() -> None:
    version = _with_snapshots(_metadata(), 3)
    text = serialize_metadata(version).decode()
    assert text.startswith('{"format-version":2,"table-uuid":')
    assert json.loads(text) == version.to_json()


def test_parsing_with_a_previous_version_reuses_its_unchanged_snapshots() -> None:
    base = _metadata()
    previous = _with_snapshots(base, 5)
    changed = _with_snapshots(base, 6, ts=7)  # same ids, other timestamps
    grown = _with_snapshots(base, 6)
    parsed = parse_metadata(serialize_metadata(grown), previous=previous)
    assert parsed == grown
    assert all(a is b for a, b in zip(parsed.snapshots[:5], previous.snapshots, strict=True))
    assert parsed.snapshots[5] is not grown.snapshots[5]  # not in previous: parsed anew
    reparsed = parse_metadata(serialize_metadata(changed), previous=previous)
    assert reparsed == changed
    assert not any(a is b for a, b in zip(reparsed.snapshots, previous.snapshots, strict=False))


def _with_logs(m: TableMetadata, entries: range) -> TableMetadata:
    return dataclasses.replace(
        m,
        snapshot_log=tuple(SnapshotLogEntry(1_700_000_000_000 + i, i) for i in entries),
        metadata_log=tuple(MetadataLogEntry(i, f"s3://b/t/metadata/{i:05d}.json") for i in entries),
    )


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_version_sharing_snapshots_with_the_previous_one_parses_only_what_is_new(
    gzipped: bool, empty_gzip_cache: None
) -> None:
    base = _metadata()
    previous = _with_logs(_with_snapshots(base, 40), range(1, 41))
    for count in (40, 41, 55):  # the same snapshots, one more, several more
        grown = _with_logs(_with_snapshots(base, count), range(3, count + 1))  # logs trimmed
        data = serialize_metadata(grown, gzipped=gzipped)
        parsed = parse_metadata(data, previous=previous)
        assert parsed == grown == parse_metadata(data)
        assert all(a is b for a, b in zip(parsed.snapshots[:40], previous.snapshots, strict=False))
        # log entries that did not change are the previous version's objects
        assert parsed.snapshot_log[0] is previous.snapshot_log[2]
        assert parsed.metadata_log[37] is previous.metadata_log[39]
        assert serialize_metadata(parsed) == serialize_metadata(grown)


def test_a_log_entry_that_differs_from_the_previous_versions_is_parsed_anew() -> None:
    base = _with_snapshots(_metadata(), 10)
    previous = _with_logs(base, range(1, 11))
    changed = list(previous.snapshot_log)
    changed[4] = SnapshotLogEntry(1, changed[4].snapshot_id)  # same snapshot, other time
    doctored = dataclasses.replace(previous, snapshot_log=tuple(changed))
    parsed = parse_metadata(serialize_metadata(doctored), previous=previous)
    assert parsed == doctored == parse_metadata(serialize_metadata(doctored))
    assert parsed.snapshot_log[4] == changed[4]
    assert parsed.snapshot_log[3] is previous.snapshot_log[3]
    assert parsed.snapshot_log[5] is previous.snapshot_log[5]
    # a log whose first entry is not in the previous one is parsed whole
    unknown = (SnapshotLogEntry(5, 999), *previous.snapshot_log)
    other = dataclasses.replace(previous, snapshot_log=unknown, metadata_log=())
    reparsed = parse_metadata(serialize_metadata(other), previous=previous)
    assert reparsed == other
    assert reparsed.snapshot_log[1] is not previous.snapshot_log[0]


def test_the_shared_prefix_is_skipped_only_when_every_byte_matches() -> None:
    base = _metadata()
    previous = _with_snapshots(base, 10)
    plain = serialize_metadata(_with_snapshots(base, 12))
    found = metadata_json.known_snapshots(plain, previous)
    assert found is not None and len(found[0]) == 10
    assert [s["snapshot-id"] for s in found[1]["snapshots"]] == [11, 12]
    # another writer's formatting, expired snapshots, changed snapshots, another table
    spaced = json.dumps(json.loads(plain), indent=2).encode()
    expired = serialize_metadata(_with_snapshots(base, 9, first=2))
    retried = serialize_metadata(_with_snapshots(base, 10, ts=7))
    other = serialize_metadata(dataclasses.replace(_with_snapshots(base, 12), table_uuid="x"))
    for data in (spaced, expired, retried, other):
        assert metadata_json.known_snapshots(data, previous) is None
        assert parse_metadata(data, previous=previous) == parse_metadata(data)


def test_a_version_without_the_previous_versions_last_snapshots_reuses_those_it_shares() -> None:
    base = _metadata()
    previous = _with_snapshots(base, 10)
    # snapshots 9 and 10 gone (e.g. a rolled-back branch expired), 11 and 12 added
    kept = _with_snapshots(base, 8).snapshots
    added = tuple(dataclasses.replace(s) for s in _with_snapshots(base, 2, first=11).snapshots)
    newer = dataclasses.replace(previous, snapshots=kept + added, last_sequence_number=13)
    data = serialize_metadata(newer)
    found = metadata_json.known_snapshots(data, previous)
    assert found is not None and found[0] == previous.snapshots[:8]
    assert all(a is b for a, b in zip(found[0], previous.snapshots, strict=False))
    assert [s["snapshot-id"] for s in found[1]["snapshots"]] == [11, 12]
    assert parse_metadata(data, previous=previous) == parse_metadata(data) == newer
    # the same file with nothing new after the shared snapshots
    data = serialize_metadata(dataclasses.replace(previous, snapshots=kept))
    found = metadata_json.known_snapshots(data, previous)
    assert found is not None and len(found[0]) == 8 and found[1]["snapshots"] == []


def test_a_repeated_key_after_the_shared_prefix_is_read_as_a_full_parse_reads_it() -> None:
    base = _metadata()
    previous = _with_snapshots(base, 3)
    plain = serialize_metadata(_with_snapshots(base, 3))
    doctored = plain[:-1] + b',"location":"s3://elsewhere"}'
    assert metadata_json.known_snapshots(doctored, previous) is None
    assert parse_metadata(doctored, previous=previous).location == "s3://elsewhere"


def test_a_corrupt_tail_after_a_shared_prefix_is_corrupt_metadata() -> None:
    base = _metadata()
    previous = _with_snapshots(base, 3)
    plain = serialize_metadata(_with_snapshots(base, 4))
    with pytest.raises(CorruptMetadata):
        parse_metadata(plain[:-5], previous=previous)
