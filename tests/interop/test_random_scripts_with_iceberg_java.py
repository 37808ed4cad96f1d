"""Random SQL scripts on one table shared by lakecat's Spark catalog and Iceberg Java: the rows
each engine reads are the rows Iceberg Java alone leaves.

Each script (``random_statements.py``, seeded) creates a table on Iceberg Java's JDBC catalog
and a control table beside it, then runs its steps: each step on the shared table with the
engine the script picks (lakecat's catalog ``scripts`` on the same JDBC catalog, lakecat's
Python API on that catalog, or Iceberg 1.10.2's Spark runtime) and on the control with Iceberg
Java. After every step both engines read the shared table, whole and with a filter they prune
its files by, and must read the control's rows (and the shared table's tag, if any, alike); a
statement fails on both tables or on neither.
At the end every snapshot the shared table keeps reads the same through both engines (time
travel), so do its metadata tables, and on format v3 so do the row ids and sequence numbers;
and pyiceberg and DuckDB read the shared table as Iceberg Java does (each that reads the
control so: a peer's own limits are not lakecat's).

The seeds below run in CI. ``LAKECAT_SCRIPT_SEEDS=first:last`` runs other seeds
(``LAKECAT_SCRIPT_STEPS`` steps each, default 14), to look for a difference: a failing seed's
script is printed in the failure, and a seed always gives the same script.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from java_session import JavaProcess, JavaTables, java_session, lakecat_on
from peers import read_rows
from random_rows import seeds
from random_statements import COLUMNS, Step, initial_rows, script

from lakecat.catalog import Catalog, Table
from lakecat.metadata.errors import CommitConflict
from lakecat.metadata.schema import schema_to_arrow
from lakecat.spark_ext.native.write import session_conf

pytestmark = [pytest.mark.interop, pytest.mark.spark]

CATALOG = "scripts"


class Lakecat:
    """lakecat's catalog plugin in the test run's SparkSession, on Iceberg Java's catalog."""

    catalog = CATALOG

    def __init__(self, spark: Any, catalog: Catalog) -> None:
        self.spark = spark
        self.api = catalog  # for the steps of the Python API

    def query(self, statement: str) -> list[list[Any]]:
        rows = [list(r) for r in self.spark.sql(statement).collect()]
        # as the Java session answers: JSON values, str for the rest
        answer: list[list[Any]] = json.loads(json.dumps(rows, default=str))
        return answer

    def attempt(self, statement: str) -> str | None:
        try:
            self.spark.sql(statement).collect()
        except Exception as exc:  # compared with Iceberg Java's failure
            return " ".join(f"{type(exc).__name__}: {exc}".split())[:600]
        return None


# the types whose min and max lakecat answers from the files' metrics (when no delete file
# applies to them); count(col) of the others (not of nested types)
BOUNDED = ("LongType", "IntegerType", "DateType", "TimestampType", "DecimalType")


def _aggregates(lakecat: Lakecat, relation: str) -> str:
    """count(*) and each column's aggregates lakecat may answer from metrics (as the relation
    names its columns: steps rename and add them)."""
    out = ["count(*)"]
    for f in lakecat.spark.sql(f"SELECT * FROM {relation}").schema.fields:
        kind = type(f.dataType).__name__
        if kind in BOUNDED:
            out += [f"count({f.name})", f"min({f.name})", f"max({f.name})"]
        elif kind in ("StringType", "DoubleType"):
            out.append(f"count({f.name})")
    return ", ".join(out)


# (write mode the table starts with, format version, partitioning), by seed
SHAPES = [
    ("copy-on-write", 2, "cat"),
    ("merge-on-read", 2, "bucket(4, id)"),
    ("merge-on-read", 3, "cat"),
    ("copy-on-write", 3, ""),
    ("merge-on-read", 3, "days(ts)"),
    ("copy-on-write", 2, "months(d)"),
]
# (Iceberg's default; lakecat's is snapshot): a stale call lands as if it ran at its commit
SERIALIZABLE = ", ".join(
    f"'write.{op}.isolation-level' = 'serializable'" for op in ("delete", "update", "merge")
)
STEPS = int(os.environ.get("LAKECAT_SCRIPT_STEPS", "14"))


@pytest.fixture(scope="module")
def java(
    java_process: JavaProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JavaTables]:
    yield from java_session(java_process, tmp_path_factory.mktemp("scripts-java"), create=False)


@pytest.fixture(scope="module")
def lakecat(spark: Any, java: JavaTables) -> Iterator[Lakecat]:
    from lakecat.spark_ext import attach_catalog

    for catalog in lakecat_on(java):
        attach_catalog(spark, CATALOG, catalog=catalog)
        yield Lakecat(spark, catalog)


NOTHING = "committed nothing"
# Iceberg Java 1.10.2's rewrite_position_delete_files fails on a table with a list or map
# column whenever it has position deletes to read (apache/iceberg#15632, fixed later), and
# the two tables need not both have some: it changes no row, so either may fail so
JAVA_REWRITE_DELETES_BUG = "Invalid partition field parent"


def _python_step(t: Table, call: tuple[Any, ...]) -> str | None:
    """Runs a step's call of lakecat's Python API on the table handle ``t``: its error, or
    None. A ``CommitConflict`` is returned as such, and a delete or update that matched no
    row on ``t`` as ``NOTHING``: either way the call changed nothing."""
    kind, *args, branch = call
    try:
        if kind == "append":
            [rows] = args
            result = t.append(_arrow(rows, t), branch=branch)
        elif kind == "merge":
            rows, update, delete_if, insert = args
            result = t.merge(
                _arrow(rows, t),
                "id",
                when_matched_update=update,
                when_matched_delete_if=delete_if,
                when_not_matched_insert=insert,
                branch=branch,
            )
        elif kind == "delete":
            result = t.delete(args[0], branch=branch)
        else:
            sets, where = args
            result = t.update(
                {c: pc.field(c) + v[1] if isinstance(v, tuple) else v for c, v in sets.items()},
                where,
                branch=branch,
            )
    except CommitConflict as exc:  # a stale handle's call, lost to a step in between
        return f"CommitConflict {type(exc).__name__}: {exc}"
    except Exception as exc:  # compared with Iceberg Java's failure
        return f"{type(exc).__name__}: {exc}"
    return NOTHING if result is None else None


def _arrow(rows: list[dict[str, Any]], t: Table) -> pa.Table:
    """A step's rows (a struct's value as a dict, a map's as a list of pairs), typed as the
    table ``t``'s columns."""
    types = schema_to_arrow(t.schema())
    return pa.table({c: pa.array([r[c] for r in rows], types.field(c).type) for c in rows[0]})


def _rows(engine: Lakecat | JavaTables, statement: str) -> list[list[Any]]:
    """A query's rows in an order of their own (rows may repeat an id)."""
    return sorted(engine.query(statement), key=repr)


_ENTRY = (
    "status, snapshot_id, sequence_number, file_sequence_number, data_file.content, "
    "data_file.file_path, data_file.record_count"
)
_FILE = (
    "content, file_path, file_format, spec_id, partition, record_count, file_size_in_bytes, "
    "column_sizes, value_counts, null_value_counts, nan_value_counts, lower_bounds, "
    "upper_bounds, split_offsets, equality_ids, sort_order_id"
)
_MANIFEST = (
    "content, path, length, partition_spec_id, added_snapshot_id, added_data_files_count, "
    "existing_data_files_count, deleted_data_files_count, added_delete_files_count, "
    "existing_delete_files_count, deleted_delete_files_count, partition_summaries"
)
# The columns of each metadata table both engines must show alike for one table;
# ``partition`` where Iceberg Java has it
METADATA_TABLES = {
    "snapshots": "committed_at, snapshot_id, parent_id, operation, manifest_list, summary",
    "history": "made_current_at, snapshot_id, parent_id, is_current_ancestor",
    "refs": "name, type, snapshot_id, max_reference_age_in_ms, min_snapshots_to_keep, "
    "max_snapshot_age_in_ms",
    "metadata_log_entries": "timestamp, file, latest_snapshot_id, latest_schema_id, "
    "latest_sequence_number",
    "manifests": _MANIFEST,
    "all_manifests": _MANIFEST + ", reference_snapshot_id",
    "entries": _ENTRY,
    "all_entries": _ENTRY,
    "files": _FILE,
    "all_files": _FILE,
    "partitions": "partition, spec_id, record_count, file_count, "
    "total_data_file_size_in_bytes, position_delete_record_count, position_delete_file_count, "
    "equality_delete_record_count, equality_delete_file_count, last_updated_at, "
    "last_updated_snapshot_id",
    "position_deletes": "pos, file_path, delete_file_path, partition, spec_id",
}
# as values both PySpark versions show alike: times as numbers (the sessions' time zones may
# differ), binary bounds in hex (PySpark 3.5 shows bytearray, 4 bytes)
_SHOWN = {
    **{c: f"unix_millis({c})" for c in ("committed_at", "made_current_at", "last_updated_at")},
    "timestamp": "unix_millis(timestamp)",
    **{c: f"transform_values({c}, (k, v) -> hex(v))" for c in ("lower_bounds", "upper_bounds")},
}


def _metadata_tables_differ(lakecat: Lakecat, java: JavaTables, name: str) -> list[str]:
    """The metadata tables of one table that read differently through the two engines."""
    differ = []
    for kind, columns in METADATA_TABLES.items():
        relation = f"db.{name}.{kind}"
        present = {c for c, _ in java.schema(f"SELECT * FROM peers.{relation}")}
        chosen = ", ".join(
            _SHOWN.get(c, c) for c in columns.split(", ") if c.split(".")[0] in present
        )
        ours = _rows(lakecat, f"SELECT {chosen} FROM {CATALOG}.{relation}")
        theirs = _rows(java, f"SELECT {chosen} FROM peers.{relation}")
        if ours != theirs:
            extra = [r for r in ours if r not in theirs][:3]
            missing = [r for r in theirs if r not in ours][:3]
            differ.append(f"{kind} ({chosen}):\n  lakecat only {extra}\n  java only {missing}")
    return differ


# What a peer cannot read, so it is not asked to: DuckDB's Python client needs pytz (which the
# peers' venv lacks) for timestamp-with-zone values
PEER_SKIPS = {"duckdb": {"timestamp"}}


def _plain(value: Any, spark_type: str) -> Any:
    """A value of a column of ``spark_type`` as JSON, in one form for every reader: a struct
    as the list of its values, a map as an object, a timestamp without its zone (UTC)."""
    if value is None:
        return None
    if spark_type.startswith("struct") and isinstance(value, dict):
        return list(value.values())
    if spark_type.startswith("map") and isinstance(value, list):
        return {k: v for k, v in value}
    if spark_type == "timestamp":
        return str(value).removesuffix("+00:00")
    return value


def _peers_misread(java: JavaTables, tables: dict[str, Table]) -> list[str]:
    """pyiceberg's and DuckDB's reads of the shared table that differ from Iceberg Java's,
    for each peer that reads the control table (Iceberg Java's alone) as Java does.
    ``tables``: the shared table and the control, by their names in ``db``."""
    shared = next(iter(tables))
    columns = java.schema(f"SELECT * FROM peers.db.{shared}")
    differ = []
    for peer in ("pyiceberg", "duckdb"):
        chosen = [(c, kind) for c, kind in columns if kind not in PEER_SKIPS.get(peer, ())]
        names = [c for c, _ in chosen]

        def plain(rows: list[list[Any]], chosen: list[tuple[str, str]] = chosen) -> Any:
            values = [
                [_plain(v, kind) for v, (_, kind) in zip(r, chosen, strict=True)] for r in rows
            ]
            return sorted(values, key=repr)

        jobs = [
            {"key": n, "metadata": t.metadata_location, "snapshot": None, "columns": names}
            for n, t in tables.items()
        ]
        read = {a["key"]: a.get("error") or plain(a["rows"]) for a in read_rows(peer, jobs)}
        expected = {
            n: plain(_rows(java, f"SELECT {', '.join(names)} FROM peers.db.{n}")) for n in tables
        }
        if any(read[n] != expected[n] for n in tables if n != shared):
            continue  # the control misread too: a limit of the peer
        if read[shared] != expected[shared]:
            differ.append(f"{peer}: {str(read[shared])[:1500]}\n  java: {expected[shared]}"[:3000])
    return differ


def _shown(steps: list[Step], upto: int) -> str:
    return "\n".join(
        f"  {i:2} {s.engine:7} {s.statement}"
        + (f"\n             as {s.python}, from step {i - s.lag}" if s.python else "")
        + f"\n             then read WHERE {s.check}"
        for i, s in enumerate(steps[: upto + 1])
    )


@pytest.mark.parametrize("seed", seeds("LAKECAT_SCRIPT_SEEDS", [11, 22, 33, 44, 55, 66]))
def test_a_random_script_on_a_shared_table_reads_as_iceberg_java_alone_leaves_it(
    lakecat: Lakecat, java: JavaTables, seed: int
) -> None:
    mode, version, partition = SHAPES[seed % len(SHAPES)]
    steps = script(seed, STEPS, partition=partition)
    name, control = f"s{seed}", f"s{seed}_control"
    for t in (name, control):
        partitioning = f"PARTITIONED BY ({partition})" if partition else ""
        java.sql(
            f"CREATE TABLE peers.db.{t} ({COLUMNS}) USING iceberg {partitioning} "
            f"TBLPROPERTIES ('format-version' = '{version}', 'write.delete.mode' = '{mode}', "
            f"'write.update.mode' = '{mode}', 'write.merge.mode' = '{mode}', {SERIALIZABLE})"
        )
        java.sql(initial_rows(f"peers.db.{t}", 60))
    engines: dict[str, Lakecat | JavaTables] = {"lakecat": lakecat, "java": java}
    handles: list[Table] = []  # the shared table as each step found it
    title = f"seed {seed} ({mode}, v{version}, {partition or 'unpartitioned'}):\n"
    for i, step in enumerate(steps):
        handles.append(lakecat.api.load_table(f"db.{name}"))
        where = title + _shown(steps, i)
        if step.engine == "python":
            ours = _python_step(handles[i - step.lag], step.python)
            if ours is not None and ours.startswith("CommitConflict"):
                assert step.lag, f"{where}\na conflict without a concurrent step: {ours}"
                continue  # it changed nothing: nor does the control
            if ours == NOTHING:
                if step.lag:
                    # no row matched where it started: it ran there, before the steps since
                    # (serializable), which the control has run already
                    continue
                ours = None  # the control's statement matches no row either
        else:
            e = engines[step.engine]
            shared = step.statement.format(t=f"{e.catalog}.db.{name}", c=e.catalog, name=name)
            ours = e.attempt(shared)
        theirs = java.attempt(
            step.statement.format(t=f"peers.db.{control}", c="peers", name=control)
        )
        known = any(m and JAVA_REWRITE_DELETES_BUG in m for m in (ours, theirs))
        assert (ours is None) == (theirs is None) or known, (
            f"{where}\nshared: {ours}\ncontrol: {theirs}"
        )
        expected = _rows(java, f"SELECT * FROM peers.db.{control}")
        assert _rows(lakecat, f"SELECT * FROM {CATALOG}.db.{name}") == expected, where
        assert _rows(java, f"SELECT * FROM peers.db.{name}") == expected, where
        check = f"WHERE {step.check}"
        expected = _rows(java, f"SELECT * FROM peers.db.{control} {check}")
        assert _rows(lakecat, f"SELECT * FROM {CATALOG}.db.{name} {check}") == expected, (
            f"{where}\nread {check}"
        )
        # Iceberg Java prunes the shared table's files by what each engine wrote of them
        assert _rows(java, f"SELECT * FROM peers.db.{name} {check}") == expected, (
            f"{where}\nIceberg Java read {check}"
        )
        if step.branch:
            expected = _rows(java, f"SELECT * FROM peers.db.{control}.branch_dev")
            assert _rows(lakecat, f"SELECT * FROM {CATALOG}.db.{name}.branch_dev") == expected, (
                f"{where}\nread branch dev"
            )
        if step.tag:
            # read with the tagged snapshot's schema: the shared table's, which may be older
            # than the control's (Iceberg Java commits a DELETE that matches no row)
            expected = _rows(java, f"SELECT * FROM peers.db.{name}.tag_v1")
            assert _rows(lakecat, f"SELECT * FROM {CATALOG}.db.{name}.tag_v1") == expected, (
                f"{where}\nread tag v1"
            )
    where = title + _shown(steps, len(steps))
    kept = [r[0] for r in java.query(f"SELECT snapshot_id FROM peers.db.{name}.snapshots")]
    for snapshot_id in kept:
        at = f"db.{name} VERSION AS OF {snapshot_id}"
        assert _rows(lakecat, f"SELECT * FROM {CATALOG}.{at}") == _rows(
            java, f"SELECT * FROM peers.{at}"
        ), f"{where}\nat snapshot {snapshot_id}"
        # aggregates answered from the files' metrics (where lakecat can) are those of the
        # rows just compared
        aggregates = f"SELECT {_aggregates(lakecat, f'{CATALOG}.{at}')} FROM {CATALOG}.{at}"
        with session_conf(lakecat.spark, {"spark.lakecat.aggregatePushDown": "false"}):
            expected = lakecat.query(aggregates)
        assert lakecat.query(aggregates) == expected, f"{where}\naggregates at {snapshot_id}"
    differ = _metadata_tables_differ(lakecat, java, name)
    assert not differ, f"{where}\nmetadata tables:\n" + "\n".join(differ)
    misread = _peers_misread(java, {t: lakecat.api.load_table(f"db.{t}") for t in (name, control)})
    assert not misread, f"{where}\npeers:\n" + "\n".join(misread)
    if version == 3:
        lineage = "SELECT id, _row_id, _last_updated_sequence_number FROM {}.db." + name
        assert _rows(lakecat, lineage.format(CATALOG)) == _rows(java, lineage.format("peers")), (
            where
        )


def test_scripts_are_the_same_for_a_seed_and_differ_between_seeds() -> None:
    assert script(5, 30) == script(5, 30)
    assert script(5, 30) != script(6, 30)
    kinds = {s.statement.split()[0] for seed in range(20) for s in script(seed, 30)}
    assert kinds >= {"INSERT", "DELETE", "UPDATE", "MERGE", "CALL", "ALTER", "REPLACE"}


def test_partition_values_of_a_shared_table_show_as_iceberg_java_shows_them(
    lakecat: Lakecat, java: JavaTables
) -> None:
    """Folder names and ``partition_summaries`` bounds are Java's ``toHumanString`` of the
    values: ``1.0E7`` and ``1.0E-4`` for floats and doubles, ``null`` for a missing bound."""
    t = "db.human_partitions"
    java.sql(
        f"CREATE TABLE peers.{t} (id bigint, f float, x double, s string) USING iceberg "
        "PARTITIONED BY (f, x, s)"
    )
    rows = (
        "(1L, CAST(1e7 AS FLOAT), 1e-4D, 'a'), (2L, CAST(0.1 AS FLOAT), 12345678.5D, NULL), "
        "(3L, CAST(-2.5 AS FLOAT), 0.001D, 'b c')"
    )
    nulls = "(4L, CAST(NULL AS FLOAT), CAST(NULL AS DOUBLE), CAST(NULL AS STRING))"
    for statement in (
        f"INSERT INTO {{}}.{t} VALUES {rows}",
        f"INSERT INTO {{}}.{t} VALUES {nulls}",
    ):
        java.sql(statement.format("peers"))
        lakecat.spark.sql(statement.format(CATALOG)).collect()  # the last: a manifest of nulls

    summaries = f"SELECT partition_summaries FROM {{}}.{t}.manifests"
    ours, theirs = _rows(lakecat, summaries.format(CATALOG)), _rows(java, summaries.format("peers"))
    assert ours == theirs
    bounds = {b for [summary] in ours for field in summary for b in field[2:]}
    assert {"1.0E7", "1.0E-4", "1.23456785E7", "null"} <= bounds
    # both engines wrote the same four partitions, each under the same folder name
    paths = [p for [p] in java.query(f"SELECT file_path FROM peers.{t}.files")]
    folders = Counter(p.rsplit("/", 1)[0].split("/data/", 1)[1] for p in paths)
    assert folders == {
        "f=1.0E7/x=1.0E-4/s=a": 2,
        "f=0.1/x=1.23456785E7/s=null": 2,
        "f=-2.5/x=0.001/s=b+c": 2,
        "f=null/x=null/s=null": 2,
    }
