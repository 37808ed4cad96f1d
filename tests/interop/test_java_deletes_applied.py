"""lakecat's delete codecs on the delete files Iceberg Java wrote (``java_fixtures.py``).

Not a lakecat reader: the live data and delete files of each snapshot come from
``expected.json`` (Iceberg Java's ``entries`` metadata table), and a few lines below apply the
spec's scope rules ("Scan Planning") to pick the deletes of each data file. What is under test
is :mod:`lakecat.metadata.deletes`: decoding Java's deletion vectors and Puffin files, reading
its position delete files, and applying all three kinds of deletes, batch by batch, until the
rows equal what Iceberg Java read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from peers import JavaFixtures, canonical_rows, local_path
from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
from pyiceberg.table.puffin import PuffinFile

from lakecat.metadata.deletes import (
    DELETION_VECTOR_BLOB_TYPE,
    EqualityDeletes,
    PositionIndex,
    deletion_vectors,
    drop_equality_deleted,
    positions_for_file,
    read_deletion_vector,
    read_footer,
    serialize_deletion_vector,
)

pytestmark = pytest.mark.interop

COLUMNS = ["id", "cat", "note"]
BATCH_ROWS = 13  # small batches: the positions of most batches start past 0


def all_dv_entries(fx: JavaFixtures) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    out = []
    for name, table in fx.tables.items():
        for snap in table["snapshots"]:
            for f in snap["delete_files"]:
                if f["file_format"] == "PUFFIN":
                    out.append((name, snap, f))
    return out


def test_deletion_vectors_decode_to_the_positions_java_deleted(
    java_fixtures: JavaFixtures,
) -> None:
    entries = all_dv_entries(java_fixtures)
    assert len(entries) > 20
    for name, snap, entry in entries:
        data_file = {d["file_path"]: d for d in snap["data_files"]}[entry["referenced_data_file"]]
        path = local_path(entry["file_path"])
        with open(path, "rb") as f:  # only the blob, as a reader with the manifest entry does
            bitmap = read_deletion_vector(
                f,
                entry["content_offset"],
                entry["content_size_in_bytes"],
                expected_cardinality=entry["record_count"],
            )
        # in the fixtures only DVs delete rows of their files (no equality deletes in v3)
        assert list(bitmap) == data_file["deleted_positions"], (name, entry)
        whole = Path(path).read_bytes()
        blob = whole[
            entry["content_offset"] : entry["content_offset"] + entry["content_size_in_bytes"]
        ]
        # all positions are below 2**32 (one key), where lakecat writes exactly Java's bytes
        assert serialize_deletion_vector(bitmap) == blob


def test_puffin_footers_of_java_dv_files(java_fixtures: JavaFixtures) -> None:
    paths = {local_path(e["file_path"]) for _, _, e in all_dv_entries(java_fixtures)}
    for path in sorted(paths):
        data = Path(path).read_bytes()
        footer = read_footer(data)
        with open(path, "rb") as f:
            assert read_footer(f) == footer
        assert footer.properties["created-by"].startswith("Apache Iceberg 1.10.2")
        for blob in footer.blobs:
            assert blob.type == DELETION_VECTOR_BLOB_TYPE
            assert blob.fields == (2147483645,)  # the _pos metadata column
            assert (blob.snapshot_id, blob.sequence_number) == (-1, -1)
            assert blob.compression_codec is None
            assert set(blob.properties) == {"referenced-data-file", "cardinality"}
        ours = deletion_vectors(data)
        theirs = deletion_vectors_from_puffin_file(PuffinFile(data))  # pyiceberg's reader
        assert {dv.referenced_data_file: dv.to_vector().to_pylist() for dv in theirs} == {
            p: list(b) for p, b in ours.items()
        }


def scope(data_file: dict[str, Any], delete: dict[str, Any], unpartitioned: set[int]) -> bool:
    """Does ``delete`` apply to ``data_file``? (the spec's Scan Planning rules)"""
    data_seq, delete_seq = data_file["sequence_number"], delete["sequence_number"]
    same_partition = (data_file["spec_id"], data_file["partition"]) == (
        delete["spec_id"],
        delete["partition"],
    )
    if delete["content"] == 1 and delete["file_format"] == "PUFFIN":
        return bool(delete["referenced_data_file"] == data_file["file_path"]) and (
            data_seq <= delete_seq
        )
    if delete["content"] == 1:
        ref = delete["referenced_data_file"]
        return ref in (None, data_file["file_path"]) and data_seq <= delete_seq and same_partition
    return data_seq < delete_seq and (same_partition or delete["spec_id"] in unpartitioned)


@pytest.mark.parametrize("batch_rows", [BATCH_ROWS, 1_000_000])
def test_applying_javas_deletes_reads_like_iceberg_java(
    java_fixtures: JavaFixtures, batch_rows: int
) -> None:
    fx = java_fixtures
    for name, table in fx.tables.items():
        metadata = json.loads(fx.metadata_path(name).read_text())
        if "schema.name-mapping.default" in metadata["properties"]:
            continue  # its imported files hold old column names: read by name, they would not
        unpartitioned = {s["spec-id"] for s in metadata["partition-specs"] if not s["fields"]}
        field_names = {
            f["id"]: f["name"]
            for s in metadata["schemas"]
            for f in s["fields"]
            if s["schema-id"] == metadata["current-schema-id"]
        }
        arrow_schema = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("note", pa.string())])
        for snap in table["snapshots"]:
            batches = []
            for data_file in snap["data_files"]:
                deletes = [d for d in snap["delete_files"] if scope(data_file, d, unpartitioned)]
                dvs = [d for d in deletes if d["file_format"] == "PUFFIN"]
                assert len(dvs) <= 1, "at most one DV per data file"
                if dvs:
                    with open(local_path(dvs[0]["file_path"]), "rb") as f:
                        index = PositionIndex(
                            read_deletion_vector(
                                f, dvs[0]["content_offset"], dvs[0]["content_size_in_bytes"]
                            )
                        )
                else:  # a DV supersedes position delete files
                    position_files = [
                        pq.read_table(local_path(d["file_path"]), columns=["file_path", "pos"])
                        for d in deletes
                        if d["content"] == 1
                    ]
                    index = positions_for_file(position_files, data_file["file_path"])
                equality = [
                    EqualityDeletes(
                        pq.read_table(local_path(d["file_path"])),
                        tuple(field_names[i] for i in d["equality_ids"]),
                    )
                    for d in deletes
                    if d["content"] == 2
                ]
                start = 0
                reader = pq.ParquetFile(local_path(data_file["file_path"]))
                for batch in reader.iter_batches(batch_size=batch_rows, columns=COLUMNS):
                    kept = index.apply(batch, start)
                    start += batch.num_rows
                    kept = drop_equality_deleted(kept, equality, schema=arrow_schema)
                    batches.append(pa.Table.from_batches([kept]).cast(arrow_schema))
                assert start == data_file["record_count"]
            got = pa.concat_tables(batches) if batches else arrow_schema.empty_table()
            assert canonical_rows(got, COLUMNS) == snap["rows"], (name, snap["step"])


def test_position_delete_files_name_javas_deleted_positions(java_fixtures: JavaFixtures) -> None:
    """Per data file, the position delete rows that apply give exactly the positions Iceberg
    Java did not return (tables with position delete files and no equality deletes)."""
    fx = java_fixtures
    for name in ("pos_unpartitioned", "pos_identity", "pos_bucket", "pos_spec_evolution"):
        for snap in fx.table(name)["snapshots"]:
            files = {
                d["file_path"]: pq.read_table(local_path(d["file_path"]))
                for d in snap["delete_files"]
            }
            for data_file in snap["data_files"]:
                applicable = [
                    files[d["file_path"]]
                    for d in snap["delete_files"]
                    if scope(data_file, d, set())
                ]
                index = positions_for_file(applicable, data_file["file_path"])
                assert index.positions.to_pylist() == data_file["deleted_positions"], name
