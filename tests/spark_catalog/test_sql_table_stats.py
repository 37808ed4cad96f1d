"""``CALL lake.system.compute_table_stats``: column NDV sketches in a registered Puffin file,
and the ``ndv_sketch`` aggregate that computes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException

from lakecat.catalog.maintenance import table_statistics
from lakecat.metadata.deletes.puffin import ZSTD, blob_data, footer_size, read_footer
from lakecat.metadata.io import local_path
from lakecat.metadata.statistics import THETA_BLOB_TYPE, ndvs, parse_theta_sketch

pytestmark = pytest.mark.spark


def call(lake: Any, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    df = lake.spark.sql(statement)
    return df.columns, [tuple(r) for r in df.collect()]


def stats_files(lake: Any) -> set[Path]:
    return set((lake.root).rglob("*.stats"))


def jvm_estimate(spark: Any, sketch: bytes) -> float:
    """DataSketches' own estimate of a serialized sketch (Spark's bundled Java library)."""
    jvm = spark._jvm
    memory = jvm.org.apache.datasketches.memory.Memory.wrap(bytearray(sketch))
    return float(jvm.org.apache.datasketches.theta.Sketch.wrap(memory).getEstimate())


@pytest.fixture
def typed(lake: Any) -> Any:
    """db.typed: a column of every primitive Spark type, a struct and an array; 40 rows,
    ``id`` distinct, the others with few distinct values and some nulls."""
    lake.sql(
        "CREATE TABLE lake.db.typed (id bigint, i int, name string, price decimal(10, 2), "
        "d date, ts timestamp, f float, x double, flag boolean, b binary, "
        "s struct<a: int, z: string>, tags array<string>) "
        "TBLPROPERTIES ('write.delete.mode' = 'merge-on-read')"
    )
    lake.sql(
        "INSERT INTO lake.db.typed SELECT id, CAST(id % 7 AS INT), "
        "IF(id % 5 = 0, NULL, concat('n', id % 11)), CAST(id % 13 AS DECIMAL(10, 2)) / 4, "
        "date_add(DATE '2024-01-01', CAST(id % 3 AS INT)), "
        "TIMESTAMP '2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, CAST(id % 4 AS INT)), "
        "CAST(id % 6 AS FLOAT) / 2, CAST(id % 9 AS DOUBLE), id % 2 = 0, "
        "CAST(concat('b', id % 8) AS BINARY), named_struct('a', CAST(id % 10 AS INT), 'z', 'q'), "
        "array('t') FROM range(0, 40)"
    )
    return lake.catalog.load_table("db.typed")


def test_compute_table_stats_registers_one_sketch_per_primitive_column(
    lake: Any, typed: Any
) -> None:
    columns, result = call(lake, "CALL lake.system.compute_table_stats('db.typed')")

    assert columns == ["statistics_file"]
    metadata = typed.refresh().metadata
    path = result[0][0]
    [entry] = metadata.statistics
    assert entry["snapshot-id"] == metadata.current_snapshot_id
    assert entry["statistics-path"] == path
    data = Path(local_path(path) or "").read_bytes()
    assert entry["file-size-in-bytes"] == len(data)
    assert entry["file-footer-size-in-bytes"] == footer_size(data)
    footer = read_footer(data)
    assert footer.properties["created-by"].startswith("lakecat ")
    schema = metadata.schema()
    primitive = ["id", "i", "name", "price", "d", "ts", "f", "x", "flag", "b"]
    assert [b.fields for b in footer.blobs] == [(schema.find_field(c).field_id,) for c in primitive]
    snapshot = metadata.current_snapshot
    assert snapshot is not None
    for blob in footer.blobs:
        assert blob.type == THETA_BLOB_TYPE
        assert blob.compression_codec == ZSTD
        assert (blob.snapshot_id, blob.sequence_number) == (
            snapshot.snapshot_id,
            snapshot.sequence_number,
        )
        assert int(blob.properties["ndv"]) == parse_theta_sketch(blob_data(data, blob)).ndv
    assert [b["properties"] for b in entry["blob-metadata"]] == [
        dict(b.properties) for b in footer.blobs
    ]
    # small columns are sketched exactly: the ndv is the number of distinct non-null values
    counts = lake.sql(
        "SELECT " + ", ".join(f"count(DISTINCT {c})" for c in primitive) + " FROM lake.db.typed"
    )[0]
    by_name = {c: ndvs(footer.blobs)[schema.find_field(c).field_id] for c in primitive}
    assert by_name == dict(zip(primitive, counts, strict=True))
    assert by_name["id"] == 40 and by_name["flag"] == 2 and by_name["name"] == 11
    stats = table_statistics(typed)
    assert stats is not None and stats.path == path and stats.ndvs == ndvs(footer.blobs)


def test_other_engines_see_the_registered_statistics(lake: Any, typed: Any) -> None:
    _, result = call(
        lake, "CALL lake.system.compute_table_stats('db.typed', columns => array('id'))"
    )

    py = lake.pyiceberg()
    try:
        [stats] = py.load_table("db.typed").metadata.statistics
    finally:
        py.engine.dispose()
    assert stats.statistics_path == result[0][0]
    [blob] = stats.blob_metadata
    assert blob.type == THETA_BLOB_TYPE and blob.properties == {"ndv": "40"}


def test_a_large_column_is_estimated_as_datasketches_estimates_it(lake: Any) -> None:
    lake.sql("CREATE TABLE lake.db.big (id bigint, k string)")
    lake.sql("INSERT INTO lake.db.big SELECT id, CAST(id % 5000 AS STRING) FROM range(0, 100000)")

    _, result = call(lake, "CALL lake.system.compute_table_stats('db.big')")

    data = Path(local_path(result[0][0]) or "").read_bytes()
    footer = read_footer(data)
    for blob, distinct in zip(footer.blobs, (100_000, 5_000), strict=True):
        sketch = blob_data(data, blob)
        parsed = parse_theta_sketch(sketch)
        assert parsed.theta < (1 << 63) - 1  # estimation mode
        assert parsed.estimate == jvm_estimate(lake.spark, sketch)
        assert int(blob.properties["ndv"]) == int(jvm_estimate(lake.spark, sketch))
        assert abs(parsed.ndv - distinct) < distinct * 0.05


def test_named_columns_nested_ones_included_are_sketched_once(lake: Any, typed: Any) -> None:
    _, result = call(
        lake,
        "CALL lake.system.compute_table_stats(table => 'db.typed', "
        "columns => array('s.a', 'name', 's.a'))",
    )

    schema = typed.refresh().metadata.schema()
    footer = read_footer(Path(local_path(result[0][0]) or "").read_bytes())
    assert dict(ndvs(footer.blobs)) == {
        schema.find_field("s.a").field_id: 10,
        schema.find_field("name").field_id: 11,
    }


def test_an_older_snapshot_is_sketched_as_it_was_and_a_new_run_replaces_its_file(
    lake: Any, typed: Any
) -> None:
    first = typed.metadata.current_snapshot_id
    lake.sql("INSERT INTO lake.db.typed (id) SELECT id FROM range(100, 150)")
    lake.sql("ALTER TABLE lake.db.typed RENAME COLUMN name TO label")

    _, older = call(
        lake,
        f"CALL lake.system.compute_table_stats('db.typed', {first}, array('id', 'name'))",
    )
    _, again = call(lake, f"CALL lake.system.compute_table_stats('db.typed', {first})")
    _, current = call(lake, "CALL lake.system.compute_table_stats('db.typed')")

    metadata = typed.refresh().metadata
    registered = {s["snapshot-id"]: s["statistics-path"] for s in metadata.statistics}
    assert registered == {first: again[0][0], metadata.current_snapshot_id: current[0][0]}
    schema = metadata.schema()
    id_field, name_field = schema.find_field("id").field_id, schema.find_field("label").field_id
    older_ndvs = ndvs(read_footer(Path(local_path(older[0][0]) or "").read_bytes()).blobs)
    assert dict(older_ndvs) == {id_field: 40, name_field: 11}
    stats = table_statistics(typed)
    assert stats is not None and stats.ndvs[id_field] == 90
    assert Path(local_path(older[0][0]) or "").exists()  # replaced, left to orphan removal


def reported_ndvs(lake: Any, query: str) -> dict[str, int]:
    """The distinct counts of the columns of ``query``'s read that Spark's cost-based
    optimizer takes from the scan's statistics."""
    columns = lake.read_statistics(query).attributeStats().toSeq()
    out = {}
    for i in range(columns.size()):
        attribute, stat = columns.apply(i)._1(), columns.apply(i)._2()
        if stat.distinctCount().isDefined():
            out[attribute.name()] = int(str(stat.distinctCount().get()))
    return out


def test_spark_s_optimizer_gets_the_distinct_counts_of_the_snapshot_read(
    lake: Any, typed: Any
) -> None:
    """As Iceberg's runtime reports them: the ``ndv`` of each column read that the statistics
    file of the snapshot read records; none for a snapshot without one."""
    first = typed.metadata.current_snapshot_id
    call(lake, "CALL lake.system.compute_table_stats('db.typed', columns => array('id', 'i'))")
    assert reported_ndvs(lake, "SELECT id, i, name FROM lake.db.typed") == {"id": 40, "i": 7}
    assert reported_ndvs(lake, "SELECT i FROM lake.db.typed") == {"i": 7}

    lake.sql("INSERT INTO lake.db.typed (id, i) SELECT id, 99 FROM range(100, 150)")

    assert reported_ndvs(lake, "SELECT id, i FROM lake.db.typed") == {}
    old = f"SELECT id, i FROM lake.db.typed VERSION AS OF {first}"
    assert reported_ndvs(lake, old) == {"id": 40, "i": 7}
    call(lake, "CALL lake.system.compute_table_stats('db.typed')")
    assert reported_ndvs(lake, "SELECT id, i, name FROM lake.db.typed") == {
        "id": 90, "i": 8, "name": 11,
    }  # fmt: skip


def test_deleted_rows_are_not_counted(lake: Any, typed: Any) -> None:
    lake.sql("DELETE FROM lake.db.typed WHERE id >= 10")
    assert typed.refresh().current_snapshot().summary_count("added-delete-files")

    call(lake, "CALL lake.system.compute_table_stats('db.typed', columns => array('id', 'i'))")

    stats = table_statistics(typed.refresh())
    schema = typed.metadata.schema()
    assert stats is not None
    assert stats.ndvs == {schema.find_field("id").field_id: 10, schema.find_field("i").field_id: 7}


def test_a_table_without_snapshots_gets_no_statistics(lake: Any) -> None:
    lake.sql("CREATE TABLE lake.db.empty (id bigint)")

    assert call(lake, "CALL lake.system.compute_table_stats('db.empty')")[1] == []
    assert lake.catalog.load_table("db.empty").metadata.statistics == ()


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ("columns => array('nope')", "nope"),
        ("columns => array('s')", "non-primitive"),
        ("columns => array('tags.element')", "non-primitive|list or map"),
        ("snapshot_id => 42", "NoSuchSnapshot"),
        ("columns => 'id'", "columns"),
    ],
)
def test_bad_input_names_the_problem_and_registers_nothing(
    lake: Any, typed: Any, arguments: str, problem: str
) -> None:
    before = typed.refresh().metadata_location

    with pytest.raises(Exception, match=problem):
        lake.sql(f"CALL lake.system.compute_table_stats('db.typed', {arguments})")

    assert typed.refresh().metadata_location == before
    assert stats_files(lake) == set()


def test_expiring_the_snapshot_deletes_its_statistics_file(lake: Any, typed: Any) -> None:
    first = typed.metadata.current_snapshot_id
    _, stats = call(lake, "CALL lake.system.compute_table_stats('db.typed')")
    lake.sql("INSERT INTO lake.db.typed (id) VALUES (1000)")

    columns, result = call(
        lake, f"CALL lake.system.expire_snapshots('db.typed', snapshot_ids => array({first}))"
    )

    assert not Path(local_path(stats[0][0]) or "").exists()
    assert typed.refresh().metadata.statistics == ()
    assert dict(zip(columns, result[0], strict=True))["deleted_statistics_files_count"] == 1


def test_ndv_sketch_is_a_function_of_the_catalog(lake: Any) -> None:
    [row] = lake.sql(
        "SELECT lake.system.ndv_sketch(id) a, lake.ndv_sketch(CAST(id % 3 AS STRING)) b, "
        "lake.system.ndv_sketch(CAST(NULL AS INT)) c, "
        "lake.system.ndv_sketch(CAST(id AS DECIMAL(20, 0))) d FROM range(0, 1000, 1, 4)"
    )

    assert [parse_theta_sketch(bytes(v)).ndv for v in row] == [1000, 3, 0, 1000]
    names = {r[0] for r in lake.sql("SHOW USER FUNCTIONS IN lake.system")}
    assert "lake.system.ndv_sketch" in names
    with pytest.raises(AnalysisException, match="ndv_sketch does not take a array<int>"):
        lake.sql("SELECT lake.system.ndv_sketch(array(1))")


def test_sketches_hash_values_in_iceberg_s_binary_form(lake: Any) -> None:
    """The same hashes as values fed to DataSketches as their Iceberg single-value bytes: an
    int's 4 little-endian bytes, a string's UTF-8; the JVM's DataSketches builds the expected
    sketch from those bytes directly."""
    jvm = lake.spark._jvm
    values = {
        "CAST(7 AS INT)": (7).to_bytes(4, "little", signed=True),
        "CAST(-2 AS BIGINT)": (-2).to_bytes(8, "little", signed=True),
        "'héllo'": "héllo".encode(),
        "DATE '1970-01-03'": (2).to_bytes(4, "little"),
        "CAST(12.34 AS DECIMAL(6, 2))": (1234).to_bytes(2, "big", signed=True),
        "true": b"\x01",
        "X'00ff'": b"\x00\xff",
    }
    for expression, encoded in values.items():
        [row] = lake.sql(f"SELECT lake.system.ndv_sketch({expression})")
        sketch = jvm.org.apache.datasketches.theta.UpdateSketch.builder().build()
        sketch.update(bytearray(encoded))
        assert bytes(row[0]) == bytes(sketch.compact().toByteArray()), expression
