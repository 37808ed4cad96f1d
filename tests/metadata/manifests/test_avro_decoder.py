"""The compiled manifest decoder (``avro_decoder.py``) reads every manifest exactly as fastavro
does, falls back to fastavro for what it does not handle, and reports damaged files as corrupt.

Manifests of every partition result type, both format versions and both codecs it handles come
from lakecat's writer here; pyiceberg's and Iceberg Java's manifests are checked in
``tests/catalog/read/test_planning_foreign.py`` and
``tests/interop/test_planning_java_manifests.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planning_oracle import assert_decoders_agree
from test_manifest import PTYPE, SCHEMA, SPEC, MemoryFileIO, _entries

from lakecat.metadata.errors import CorruptMetadata
from lakecat.metadata.manifests.avro_decoder import Unsupported, compiled, read_container
from lakecat.metadata.manifests.datafile import DataFile, ManifestEntry, ManifestFile, Status
from lakecat.metadata.manifests.manifest import (
    decode_manifest,
    decode_manifest_entries,
    decode_manifest_records,
    entry_decoder,
    write_manifest,
    write_manifest_list,
)


def _written(
    entries: list[ManifestEntry], *, codec: str = "deflate", format_version: int = 2
) -> tuple[MemoryFileIO, ManifestFile]:
    io = MemoryFileIO()
    written = write_manifest(
        io,
        "mem://m.avro",
        spec=SPEC,
        schema=SCHEMA,
        entries=entries,
        added_snapshot_id=100,
        codec=codec,
        format_version=format_version,
    )
    listed, _ = write_manifest_list(
        io,
        "mem://ml.avro",
        [written],
        snapshot_id=100,
        parent_snapshot_id=None,
        sequence_number=7,
        format_version=format_version,
        first_row_id=0 if format_version >= 3 else None,
    )
    return io, listed[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=_entries(SPEC, PTYPE),
    codec=st.sampled_from(["deflate", "null"]),
    format_version=st.sampled_from([2, 3]),
)
def test_compiled_decoder_reads_what_fastavro_reads(
    entries: list[ManifestEntry], codec: str, format_version: int
) -> None:
    io, _ = _written(entries, codec=codec, format_version=format_version)
    data = io.read("mem://m.avro")
    assert assert_decoders_agree(data) == len(entries)
    assert decode_manifest_records(data, "mem://m.avro").maps_decoded


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=_entries(SPEC, PTYPE),
    codec=st.sampled_from(["deflate", "null"]),
    format_version=st.sampled_from([2, 3]),
)
def test_entries_decoded_straight_from_the_bytes_are_the_entries_built_from_records(
    entries: list[ManifestEntry], codec: str, format_version: int
) -> None:
    io, row = _written(entries, codec=codec, format_version=format_version)
    data = io.read("mem://m.avro")
    specs = {SPEC.spec_id: SPEC}
    records = decode_manifest_records(data, row.manifest_path)
    decode = entry_decoder(
        row, records.writer_schema, specs=specs, schema=SCHEMA, maps_decoded=True
    )
    straight = decode_manifest_entries(data, row, specs=specs, schema=SCHEMA)
    # inheritance included: snapshot ids, sequence numbers, v3 first row ids
    assert straight == [decode(rec) for rec in records.records]
    assert straight == decode_manifest(data, row, specs=specs, schema=SCHEMA)


def test_entries_of_a_file_the_compiled_decoder_declines_are_left_to_records() -> None:
    partition = tuple(None for _ in SPEC.fields)
    entries = [
        ManifestEntry(
            Status.ADDED,
            DataFile(f"s3://b/t/{i}.parquet", "PARQUET", partition, 10, 100, SPEC.spec_id),
            100,
            None,
            None,
        )
        for i in range(5)
    ]
    io, row = _written(entries, codec="bzip2")
    specs = {SPEC.spec_id: SPEC}
    data = io.read("mem://m.avro")
    assert decode_manifest_entries(data, row, specs=specs, schema=SCHEMA) is None
    assert [
        e.data_file.file_path for e in decode_manifest(data, row, specs=specs, schema=SCHEMA)
    ] == [e.data_file.file_path for e in entries]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=_entries(SPEC, PTYPE), codec=st.sampled_from(["bzip2", "xz"]))
def test_other_codecs_go_to_fastavro_and_decode_to_the_same_entries(
    entries: list[ManifestEntry], codec: str
) -> None:
    io, row = _written(entries, codec=codec)
    data = io.read("mem://m.avro")
    assert not decode_manifest_records(data, "mem://m.avro").maps_decoded  # fastavro's
    io2, row2 = _written(entries)  # deflate: the compiled decoder
    specs = {SPEC.spec_id: SPEC}
    assert decode_manifest(data, row, specs=specs, schema=SCHEMA) == decode_manifest(
        io2.read("mem://m.avro"), row2, specs=specs, schema=SCHEMA
    )


def test_damaged_manifests_are_corrupt_metadata() -> None:
    partition = tuple(None for _ in SPEC.fields)
    entries = [
        ManifestEntry(
            Status.ADDED,
            DataFile(f"s3://b/t/{i}.parquet", "PARQUET", partition, 10, 100, SPEC.spec_id),
            100,
            None,
            None,
        )
        for i in range(50)
    ]
    io, row = _written(entries)
    data = io.read("mem://m.avro")
    specs = {SPEC.spec_id: SPEC}
    for damaged in (data[: len(data) - 20], data[:100], b"Obj\x01" + b"\xff" * 40, b"not avro"):
        with pytest.raises(CorruptMetadata):
            decode_manifest(damaged, row, specs=specs, schema=SCHEMA)
    with pytest.raises(ValueError):
        read_container(data[:-3])  # a block cut short: the compiled path declines


def _schema(fields: list[dict[str, Any]]) -> str:
    return json.dumps({"type": "record", "name": "r", "fields": fields})


def test_schemas_it_cannot_compile_are_left_to_fastavro() -> None:
    wide_union = [{"name": "u", "type": ["null", *(f"fixed{i}" for i in range(70))]}]
    with pytest.raises(Unsupported):
        compiled(_schema(wide_union))
    with pytest.raises(Unsupported):
        compiled(_schema([{"name": "x", "type": "no_such_named_type"}]))
