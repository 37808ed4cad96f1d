"""Build Iceberg tables with deletes using Iceberg Java itself, the reference implementation.

usage: ~/.cache/lakecat-peers/spark35/bin/python java_fixtures.py OUT_DIR

Runs Apache Iceberg Java 1.10.2 on PySpark 3.5.9 (the ``spark35`` venv that
``/work/shared/peers/setup.sh`` builds; ``PEERS_HOME`` and ``PEERS_SCRIPTS`` override the state
folder and the scripts folder) and writes into OUT_DIR, which must not exist or be empty:

``OUT_DIR/catalog.db``
    an Iceberg **JdbcCatalog** on SQLite, catalog name ``peers``, namespace ``db`` (the JDBC
    catalog tables with ``iceberg_type``, i.e. ``jdbc.schema-version=V1``). lakecat opens it with
    ``Catalog("sqlite:///OUT_DIR/catalog.db", warehouse="OUT_DIR/warehouse", name="peers")``;
    pyiceberg with ``SqlCatalog("peers", uri="sqlite:///OUT_DIR/catalog.db", ...)``.
``OUT_DIR/warehouse/db/<table>/``
    data, delete and metadata files. Java writes locations as ``file:/abs/path`` URIs.
``OUT_DIR/expected.json``
    what Iceberg Java reads, for every table and **every** snapshot (keys documented in
    :meth:`Fixtures.describe_snapshot` and :meth:`Fixtures.describe_table`). The rows come from
    reading each snapshot back with Iceberg Java (``spark.read.format("iceberg")
    .option("snapshot-id", ...)``), never from this script's own bookkeeping.

All tables have the columns ``id`` (bigint; int in the ``eq_*`` tables), ``cat`` (string:
``id % 4`` = 0, 1, 2, 3 gives 'a', 'b', 'c', NULL) and ``note`` ('n<id>', prefixed 'u' by an
UPDATE, 'm' by a MERGE update, 'new<id>' for a MERGE insert). "INSERT a..b" inserts ids a to b.
Spark SQL writes everything except equality deletes, and the data and position delete files
committed with them, which go through Iceberg's Java API over py4j (``GenericAppenderFactory`` ->
``EqualityDeleteWriter`` / ``PositionDeleteWriter`` / ``DataWriter``, then
``table.newRowDelta()``): no Spark statement writes equality deletes.

=========================== ===== ==============================================================
table                       v     snapshots (merge-on-read unless said otherwise)
=========================== ===== ==============================================================
pos_unpartitioned           2     INSERT 1..150; INSERT 151..300; DELETE id%7=0; UPDATE id 100..180;
                                  MERGE (source 280..320: matched even -> delete, matched odd ->
                                  update, not matched -> insert); DELETE id%7=1 or 281, 283.
                                  ``write.delete.granularity=partition``: one position delete
                                  file per commit covers several data files (no file_path bounds)
pos_identity                2     the same on identity(cat) (NULL partition included);
                                  file-scoped position deletes (1.10's default granularity)
pos_bucket                  2     the same on bucket(4, id)
pos_spec_evolution          2     spec 0 identity(cat): INSERT 1..200; DELETE id%7=0; spec 1 adds
                                  bucket(4, id): INSERT 201..300; DELETE id%5=0 (delete files in
                                  both specs); spec 2 drops cat: UPDATE id%9=0; DELETE id 190..215
dv_unpartitioned            3     INSERT 1..150; INSERT 151..300; DELETE id%7=0 (DVs); DELETE
                                  id%11=0 (each DV replaced by a merged one in a new Puffin file);
                                  UPDATE id 100..180 (run-length encoded DV); DELETE id>290 or 1
dv_identity                 3     identity(cat): INSERT x2; DELETE; UPDATE; MERGE; DELETE id%7=1
dv_upgraded_from_v2         2->3  INSERT x2; DELETE id%7=0 (v2 file-scoped position delete
                                  files); format-version 3; DELETE id%11=0 (DVs that absorb the
                                  old deletes; the position delete files are removed); UPDATE
eq_unpartitioned            2     INSERT 1..200; equality deletes (global): on [id] 5, 10, 15, 999;
                                  on [cat] NULL, 'zzz' (every NULL-cat row goes); INSERT 5, 10, 11
                                  again (stay visible); on [id, cat] (20,'a'), (21,'a'), (22,NULL),
                                  (23,NULL) (only 20 matches); one commit with a data file (30, 31,
                                  1000..1004), an equality delete on [id] 30, 31 (old rows go, the
                                  new ones stay: same sequence number) and a position delete of
                                  the new file's positions 1, 3 (applies: same sequence number)
eq_identity                 2     identity(cat): INSERT 1..200; equality delete on [id] in cat='a'
                                  (4, 8; 5 is in 'b' and stays); in cat=NULL (3, 7; 4 stays);
                                  INSERT (4,'a'), (3,NULL) again; on [note] in cat='c' ('n6',
                                  'n10'; 'n9' is in 'b' and stays)
eq_global_after_evolution   2     spec 0 unpartitioned: INSERT 1..50; spec 1 identity(cat): INSERT
                                  51..200; spec-0 (global) equality delete on [id] 2, 60..63 (all
                                  partitions); spec-1 one in cat='b' on [id] 65, 66 (in 'c':
                                  stays), 1 (a spec-0 file: stays)
cow_control                 2     copy-on-write: INSERT x2; DELETE id%7=0; UPDATE: no delete files
mapped_import               2     files without field ids, imported: ``schema.name-mapping.default``
                                  maps ``cat`` also by its old name ``category``; plain Parquet
                                  files (ids 1..40, columns id, category, note and an unmapped
                                  ``junk``) added by ``CALL system.add_files``; INSERT 41..60;
                                  DELETE id%5=0; UPDATE id 10..20 (position deletes on both kinds
                                  of files)
=========================== ===== ==============================================================
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

PEERS_SCRIPTS = os.environ.get("PEERS_SCRIPTS", "/work/shared/peers")
CATALOG = "peers"
NAMESPACE = "db"
MOR = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}
COW = {
    "write.delete.mode": "copy-on-write",
    "write.update.mode": "copy-on-write",
    "write.merge.mode": "copy-on-write",
}
ENTRY_FIELDS = (
    "content",
    "file_path",
    "file_format",
    "spec_id",
    "partition",
    "record_count",
    "file_size_in_bytes",
    "equality_ids",
    "referenced_data_file",
    "content_offset",
    "content_size_in_bytes",
)
# the fixtures' generator version: bump to invalidate caches when the table contents change
FIXTURES_VERSION = 2


def peer_session(conf: dict[str, str] | None = None) -> Any:
    """A SparkSession on a new JVM with the peers' Iceberg Java (``peer_spark.session``)."""
    sys.path.insert(0, PEERS_SCRIPTS)
    import peer_spark  # the peers' session builder (jars, Iceberg extensions)

    return peer_spark.session(conf)


class Fixtures:
    def __init__(self, out: str, base: Any = None) -> None:
        """The catalog in ``out``; on a new JVM, or on ``base``'s (a session of its own there:
        its own SQL conf, catalogs and current namespace)."""
        self.out = out
        self.db = os.path.join(out, "catalog.db")
        self.warehouse = os.path.join(out, "warehouse")
        p = f"spark.sql.catalog.{CATALOG}"
        catalog_conf = {
            p: "org.apache.iceberg.spark.SparkCatalog",
            f"{p}.type": "jdbc",
            f"{p}.uri": f"jdbc:sqlite:{self.db}",
            f"{p}.warehouse": f"file://{self.warehouse}",
            f"{p}.jdbc.schema-version": "V1",
            # Java API commits below must be seen by the next Spark statement
            f"{p}.cache-enabled": "false",
        }
        if base is None:
            self.spark = peer_session(catalog_conf)
        else:
            self.spark = base.newSession()
            for key, value in catalog_conf.items():
                self.spark.conf.set(key, value)
            self.activate()
        self.jvm = self.spark._jvm
        self.gateway = self.spark.sparkContext._gateway
        self.spark.sql(f"CREATE NAMESPACE {CATALOG}.{NAMESPACE}")
        self.tables: dict[str, Any] = {}
        self.steps: dict[str, list[tuple[int, str]]] = {}

    def activate(self) -> None:
        """Makes this session the JVM's active one: Iceberg's ``spark.read.format("iceberg")``
        finds a table's catalog in the active session's conf."""
        self.spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(
            self.spark._jsparkSession
        )

    # -- helpers ------------------------------------------------------------------------------

    def name(self, table: str) -> str:
        return f"{CATALOG}.{NAMESPACE}.{table}"

    def load(self, table: str) -> Any:
        """The org.apache.iceberg.Table, freshly loaded from the JDBC catalog."""
        spark3util = self.jvm.org.apache.iceberg.spark.Spark3Util
        return spark3util.loadIcebergTable(self.spark._jsparkSession, self.name(table))

    def current_snapshot_id(self, table: str) -> int | None:
        snap = self.load(table).currentSnapshot()
        return None if snap is None else int(snap.snapshotId())

    def step(self, table: str, label: str, action: Callable[[], object]) -> None:
        """Run one change; record which snapshot it produced (ALTERs produce none)."""
        before = self.current_snapshot_id(table)
        action()
        after = self.current_snapshot_id(table)
        if after is not None and after != before:
            self.steps[table].append((after, label))

    def sql(self, table: str, statement: str) -> None:
        """Run a Spark SQL statement; ``{t}`` is the table's full name."""
        text = statement.format(t=self.name(table))
        self.step(table, text.replace(self.name(table), table), lambda: self.spark.sql(text))

    def create(
        self,
        table: str,
        *,
        version: int,
        props: dict[str, str],
        partitioned_by: str = "",
        id_type: str = "BIGINT",
        description: str,
    ) -> None:
        allprops = {"format-version": str(version), **props}
        tblprops = ", ".join(f"'{k}'='{v}'" for k, v in allprops.items())
        part = f"PARTITIONED BY ({partitioned_by})" if partitioned_by else ""
        self.spark.sql(
            f"CREATE TABLE {self.name(table)} (id {id_type}, cat STRING, note STRING) "
            f"USING iceberg {part} TBLPROPERTIES ({tblprops})"
        )
        self.tables[table] = {"description": description, "created_properties": allprops}
        self.steps[table] = []

    def insert_range(self, table: str, lo: int, hi: int) -> None:
        """INSERT ids lo..hi (inclusive), cat by ``id % 4`` (a, b, c, NULL), note 'n<id>'."""
        self.sql(
            table,
            f"INSERT INTO {{t}} SELECT CAST(id AS {self.id_sql_type(table)}), "
            "CASE id % 4 WHEN 0 THEN 'a' WHEN 1 THEN 'b' WHEN 2 THEN 'c' END, "
            f"concat('n', id) FROM range({lo}, {hi + 1})",
        )

    def id_sql_type(self, table: str) -> str:
        id_type = self.load(table).schema().findField("id").type().toString()
        return {"int": "INT", "long": "BIGINT"}[id_type]

    def int_array(self, values: list[int]) -> Any:
        arr = self.gateway.new_array(self.jvm.int, len(values))
        for i, v in enumerate(values):
            arr[i] = v
        return arr

    def partition_key(self, jtable: Any, spec: Any, values: dict[str, Any]) -> Any:
        """The partition (a StructLike) of a row with these column values under ``spec``."""
        if spec.isUnpartitioned():
            return None
        schema = jtable.schema()
        row = self.jvm.org.apache.iceberg.data.GenericRecord.create(schema)
        for k, v in values.items():
            row.setField(k, v)
        key = self.jvm.org.apache.iceberg.PartitionKey(spec, schema)
        key.partition(row)
        return key

    def output_file(self, jtable: Any, spec: Any, partition: Any) -> Any:
        fmt = self.jvm.org.apache.iceberg.FileFormat.PARQUET
        factory = self.jvm.org.apache.iceberg.io.OutputFileFactory.builderFor(jtable, 1, 1)
        factory = factory.format(fmt).build()
        if partition is None:
            return factory.newOutputFile()
        return factory.newOutputFile(spec, partition)

    def records(self, schema: Any, rows: list[dict[str, Any]]) -> list[Any]:
        out = []
        for r in rows:
            rec = self.jvm.org.apache.iceberg.data.GenericRecord.create(schema)
            for k, v in r.items():
                rec.setField(k, v)
            out.append(rec)
        return out

    def equality_delete_file(
        self,
        jtable: Any,
        columns: list[str],
        rows: list[dict[str, Any]],
        *,
        spec: Any = None,
        partition_values: dict[str, Any] | None = None,
    ) -> Any:
        """Write one equality delete Parquet file (delete columns = ``columns``).

        ``rows`` are dicts of Python values: str, None, and int for ``int`` columns only (py4j
        sends small Python ints as java.lang.Integer, which a ``long`` column rejects).
        """
        schema = jtable.schema()
        spec = spec if spec is not None else jtable.spec()
        ids = [int(schema.findField(c).fieldId()) for c in columns]
        delete_schema = schema.select(columns)
        factory = self.jvm.org.apache.iceberg.data.GenericAppenderFactory(
            schema, spec, self.int_array(ids), delete_schema, None
        )
        partition = self.partition_key(jtable, spec, partition_values or {})
        writer = factory.newEqDeleteWriter(
            self.output_file(jtable, spec, partition),
            self.jvm.org.apache.iceberg.FileFormat.PARQUET,
            partition,
        )
        for rec in self.records(delete_schema, rows):
            writer.write(rec)
        writer.close()
        return writer.toDeleteFile()

    def data_file(self, jtable: Any, rows: list[dict[str, Any]]) -> Any:
        """Write one data file (all rows in one partition of the current spec)."""
        schema, spec = jtable.schema(), jtable.spec()
        factory = self.jvm.org.apache.iceberg.data.GenericAppenderFactory(schema, spec)
        partition = self.partition_key(jtable, spec, rows[0])
        writer = factory.newDataWriter(
            self.output_file(jtable, spec, partition),
            self.jvm.org.apache.iceberg.FileFormat.PARQUET,
            partition,
        )
        for rec in self.records(schema, rows):
            writer.write(rec)
        writer.close()
        return writer.toDataFile()

    def position_delete_file(self, jtable: Any, data_file: Any, positions: list[int]) -> Any:
        """Write one position delete file for ``data_file`` (same partition)."""
        schema, spec = jtable.schema(), jtable.spec()
        factory = self.jvm.org.apache.iceberg.data.GenericAppenderFactory(schema, spec)
        partition = data_file.partition() if not spec.isUnpartitioned() else None
        writer = factory.newPosDeleteWriter(
            self.output_file(jtable, spec, partition),
            self.jvm.org.apache.iceberg.FileFormat.PARQUET,
            partition,
        )
        pos_delete = self.jvm.org.apache.iceberg.deletes.PositionDelete.create()
        for pos in sorted(positions):
            writer.write(pos_delete.set(data_file.location(), pos))
        writer.close()
        return writer.toDeleteFile()

    def row_delta(self, table: str, label: str, build: Callable[[Any], list[Any]]) -> None:
        """Commit data/delete files that ``build(jtable)`` writes in one RowDelta."""

        def commit() -> None:
            jtable = self.load(table)
            delta = jtable.newRowDelta()
            for f in build(jtable):
                if f.content().toString() == "DATA":
                    delta = delta.addRows(f)
                else:
                    delta = delta.addDeletes(f)
            delta.commit()

        self.step(table, label, commit)

    # -- the tables ---------------------------------------------------------------------------

    def position_delete_tables(self) -> None:
        variants = [
            (
                "pos_unpartitioned",
                "",
                {"write.delete.granularity": "partition"},
                "v2 merge-on-read, unpartitioned, write.delete.granularity=partition: each "
                "position delete file holds deletes for several data files",
            ),
            (
                "pos_identity",
                "cat",
                {},
                "v2 merge-on-read, identity(cat) (null partition included), file-scoped "
                "position deletes (Iceberg 1.10's default granularity)",
            ),
            (
                "pos_bucket",
                "bucket(4, id)",
                {},
                "v2 merge-on-read, bucket(4, id), file-scoped position deletes",
            ),
        ]
        for table, part, extra, description in variants:
            self.create(
                table,
                version=2,
                props={**MOR, **extra},
                partitioned_by=part,
                description=description,
            )
            self.insert_range(table, 1, 150)
            self.insert_range(table, 151, 300)
            self.sql(table, "DELETE FROM {t} WHERE id % 7 = 0")
            self.sql(table, "UPDATE {t} SET note = concat('u', note) WHERE id BETWEEN 100 AND 180")
            self.merge(table)
            self.sql(table, "DELETE FROM {t} WHERE id % 7 = 1 OR id IN (281, 283)")

    def merge(self, table: str) -> None:
        """MERGE: matched & even -> delete, matched & odd -> update, not matched -> insert."""
        self.spark.sql(
            "CREATE OR REPLACE TEMP VIEW merge_source AS SELECT id, "
            "CASE id % 4 WHEN 0 THEN 'a' WHEN 1 THEN 'b' WHEN 2 THEN 'c' END AS cat "
            "FROM range(280, 321)"
        )
        self.sql(
            table,
            "MERGE INTO {t} t USING merge_source s ON t.id = s.id "
            "WHEN MATCHED AND s.id % 2 = 0 THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET t.note = concat('m', t.note) "
            "WHEN NOT MATCHED THEN "
            "INSERT (id, cat, note) VALUES (s.id, s.cat, concat('new', s.id))",
        )

    def spec_evolution_table(self) -> None:
        table = "pos_spec_evolution"
        self.create(
            table,
            version=2,
            props=MOR,
            partitioned_by="cat",
            description="v2 merge-on-read: spec 0 identity(cat); deletes; spec 1 adds "
            "bucket(4, id); inserts and deletes across both specs; spec 2 drops cat; UPDATE",
        )
        self.insert_range(table, 1, 200)
        self.sql(table, "DELETE FROM {t} WHERE id % 7 = 0")
        self.sql(table, "ALTER TABLE {t} ADD PARTITION FIELD bucket(4, id)")
        self.insert_range(table, 201, 300)
        self.sql(table, "DELETE FROM {t} WHERE id % 5 = 0")
        self.sql(table, "ALTER TABLE {t} DROP PARTITION FIELD cat")
        self.sql(table, "UPDATE {t} SET note = concat('u', note) WHERE id % 9 = 0")
        self.sql(table, "DELETE FROM {t} WHERE id BETWEEN 190 AND 215")

    def deletion_vector_tables(self) -> None:
        table = "dv_unpartitioned"
        self.create(
            table,
            version=3,
            props=MOR,
            description="v3 merge-on-read, unpartitioned: deletion vectors; the second and "
            "later DELETEs replace a data file's DV with a merged one",
        )
        self.insert_range(table, 1, 150)
        self.insert_range(table, 151, 300)
        self.sql(table, "DELETE FROM {t} WHERE id % 7 = 0")
        self.sql(table, "DELETE FROM {t} WHERE id % 11 = 0")
        self.sql(table, "UPDATE {t} SET note = concat('u', note) WHERE id BETWEEN 100 AND 180")
        self.sql(table, "DELETE FROM {t} WHERE id > 290 OR id = 1")

        table = "dv_identity"
        self.create(
            table,
            version=3,
            props=MOR,
            partitioned_by="cat",
            description="v3 merge-on-read, identity(cat): DELETE, UPDATE, MERGE, DELETE -> DVs",
        )
        self.insert_range(table, 1, 150)
        self.insert_range(table, 151, 300)
        self.sql(table, "DELETE FROM {t} WHERE id % 7 = 0")
        self.sql(table, "UPDATE {t} SET note = concat('u', note) WHERE id BETWEEN 100 AND 180")
        self.merge(table)
        self.sql(table, "DELETE FROM {t} WHERE id % 7 = 1")

        table = "dv_upgraded_from_v2"
        self.create(
            table,
            version=2,
            props=MOR,
            description="v2 merge-on-read with file-scoped position delete files, upgraded to "
            "v3; the next DELETE writes DVs that absorb the old position deletes",
        )
        self.insert_range(table, 1, 150)
        self.insert_range(table, 151, 300)
        self.sql(table, "DELETE FROM {t} WHERE id % 7 = 0")
        self.sql(table, "ALTER TABLE {t} SET TBLPROPERTIES ('format-version'='3')")
        self.sql(table, "DELETE FROM {t} WHERE id % 11 = 0")
        self.sql(table, "UPDATE {t} SET note = concat('u', note) WHERE id BETWEEN 100 AND 120")

    def equality_unpartitioned(self) -> None:
        table = "eq_unpartitioned"
        self.create(
            table,
            version=2,
            props=MOR,
            id_type="INT",
            description="v2 unpartitioned, equality deletes through the Java API (global): "
            "on id; on cat with a NULL value; a deleted key re-inserted later; on (id, cat); "
            "a Flink-style upsert (data + equality delete + position delete in one commit)",
        )
        self.insert_range(table, 1, 200)
        self.row_delta(
            table,
            "equality delete on [id]: 5, 10, 15, 999 (no such row)",
            lambda jt: [
                self.equality_delete_file(jt, ["id"], [{"id": i} for i in (5, 10, 15, 999)])
            ],
        )
        self.row_delta(
            table,
            "equality delete on [cat]: NULL, 'zzz' (no such row) -> every NULL cat row goes",
            lambda jt: [self.equality_delete_file(jt, ["cat"], [{"cat": None}, {"cat": "zzz"}])],
        )
        self.sql(
            table,
            "INSERT INTO {t} VALUES (5, 'b', 'reinserted5'), (10, 'c', 'reinserted10'), "
            "(11, NULL, 'reinserted11')",
        )
        self.row_delta(
            table,
            "equality delete on [id, cat]: (20,'a') matches; (21,'a') and (22,NULL) do not; "
            "(23, NULL) matches nothing (23 was deleted by the NULL-cat delete)",
            lambda jt: [
                self.equality_delete_file(
                    jt,
                    ["id", "cat"],
                    [
                        {"id": 20, "cat": "a"},
                        {"id": 21, "cat": "a"},
                        {"id": 22, "cat": None},
                        {"id": 23, "cat": None},
                    ],
                )
            ],
        )

        def upsert(jt: Any) -> list[Any]:
            new_rows = self.data_file(
                jt,
                [{"id": 30, "cat": "c", "note": "upserted30"}, {"id": 31, "cat": "d", "note": "x"}]
                + [{"id": 1000 + i, "cat": "z", "note": f"same-commit{i}"} for i in range(5)],
            )
            eq = self.equality_delete_file(jt, ["id"], [{"id": 30}, {"id": 31}])
            pos = self.position_delete_file(jt, new_rows, [1, 3])
            return [new_rows, eq, pos]

        self.row_delta(
            table,
            "upsert in one commit: new data file (30, 31, 1000..1004) + equality delete on [id] "
            "30, 31 (old rows go, the new ones stay: same sequence number) + position delete "
            "of positions 1, 3 of the new file (applies: same sequence number)",
            upsert,
        )
        # No int -> bigint promotion here: Iceberg Java 1.10.2 then fails to read the table
        # (IllegalStateException "Not an instance of java.lang.Long" in DeleteFilter: the old
        # equality delete rows stay java.lang.Integer), so it cannot serve as the oracle.

    def equality_partitioned(self) -> None:
        table = "eq_identity"
        self.create(
            table,
            version=2,
            props=MOR,
            id_type="INT",
            partitioned_by="cat",
            description="v2 identity(cat), equality deletes scoped to one partition "
            "(including the NULL partition), then a re-insert of a deleted key",
        )
        self.insert_range(table, 1, 200)
        self.row_delta(
            table,
            "equality delete on [id] in partition cat='a': 4, 8, 5 (5 is in 'b': stays)",
            lambda jt: [
                self.equality_delete_file(
                    jt, ["id"], [{"id": 4}, {"id": 8}, {"id": 5}], partition_values={"cat": "a"}
                )
            ],
        )
        self.row_delta(
            table,
            "equality delete on [id] in partition cat=NULL: 3, 7, 4 (4 is in 'a')",
            lambda jt: [
                self.equality_delete_file(
                    jt, ["id"], [{"id": 3}, {"id": 7}, {"id": 4}], partition_values={"cat": None}
                )
            ],
        )
        self.sql(table, "INSERT INTO {t} VALUES (4, 'a', 'reinserted4'), (3, NULL, 'reinserted3')")
        self.row_delta(
            table,
            "equality delete on [note] in partition cat='c': 'n6', 'n10', 'n9' (9 is in 'b')",
            lambda jt: [
                self.equality_delete_file(
                    jt,
                    ["note"],
                    [{"note": "n6"}, {"note": "n10"}, {"note": "n9"}],
                    partition_values={"cat": "c"},
                )
            ],
        )

        table = "eq_global_after_evolution"
        self.create(
            table,
            version=2,
            props=MOR,
            id_type="INT",
            description="v2 created unpartitioned (spec 0), then identity(cat) (spec 1); an "
            "equality delete written with spec 0 is global and applies to spec-1 files in "
            "every partition; one written with spec 1 applies to its partition only",
        )
        self.insert_range(table, 1, 50)
        self.sql(table, "ALTER TABLE {t} ADD PARTITION FIELD cat")
        self.insert_range(table, 51, 200)

        def global_delete(jt: Any) -> list[Any]:
            spec0 = jt.specs().get(0)
            return [
                self.equality_delete_file(
                    jt, ["id"], [{"id": i} for i in (2, 60, 61, 62, 63)], spec=spec0
                )
            ]

        self.row_delta(
            table, "global (spec 0) equality delete on [id]: 2, 60, 61, 62, 63", global_delete
        )
        self.row_delta(
            table,
            "spec 1 equality delete on [id] in cat='b': 65, 66 (66 is in 'c'), 1 (spec 0 file)",
            lambda jt: [
                self.equality_delete_file(
                    jt, ["id"], [{"id": 65}, {"id": 66}, {"id": 1}], partition_values={"cat": "b"}
                )
            ],
        )

    def copy_on_write_control(self) -> None:
        table = "cow_control"
        self.create(
            table,
            version=2,
            props=COW,
            description="v2 copy-on-write control: DELETE and UPDATE rewrite data files, "
            "no delete files",
        )
        self.insert_range(table, 1, 150)
        self.insert_range(table, 151, 300)
        self.sql(table, "DELETE FROM {t} WHERE id % 7 = 0")
        self.sql(table, "UPDATE {t} SET note = concat('u', note) WHERE id BETWEEN 100 AND 180")

    def imported_with_name_mapping(self) -> None:
        table = "mapped_import"
        self.create(
            table,
            version=2,
            props=MOR,
            description="v2 merge-on-read, files without field ids read through the name mapping",
        )
        mapping = json.dumps(
            [
                {"field-id": 1, "names": ["id"]},
                {"field-id": 2, "names": ["cat", "category"]},
                {"field-id": 3, "names": ["note"]},
            ]
        )
        self.spark.sql(
            f"ALTER TABLE {self.name(table)} SET TBLPROPERTIES "
            f"('schema.name-mapping.default' = '{mapping}')"
        )
        source = os.path.join(self.out, "import", table)
        self.spark.sql(
            "SELECT id, CASE id % 4 WHEN 0 THEN 'a' WHEN 1 THEN 'b' WHEN 2 THEN 'c' END "
            "AS category, concat('n', id) AS note, id * 2 AS junk FROM range(1, 41)"
        ).coalesce(2).write.parquet(source)
        self.sql(
            table,
            f"CALL {CATALOG}.system.add_files(table => '{NAMESPACE}.{table}', "
            f"source_table => '`parquet`.`{source}`')",
        )
        self.insert_range(table, 41, 60)
        self.sql(table, "DELETE FROM {t} WHERE id % 5 = 0")
        self.sql(table, "UPDATE {t} SET note = concat('u', note) WHERE id BETWEEN 10 AND 20")

    # -- reading back with Iceberg Java -------------------------------------------------------

    def describe_snapshot(self, table: str, snapshot: Any, label: str) -> dict[str, Any]:
        """What Iceberg Java reads at one snapshot.

        ``rows``: sorted ``[id, cat, note]`` lists; ``row_count``/``sum_id``; ``data_files`` and
        ``delete_files``: the live manifest entries (``entries`` metadata table) with their data
        sequence numbers; ``data_files[].deleted_positions``: the positions of that file that
        Iceberg Java does not return (position deletes, DVs and equality deletes together).
        """
        sid = int(snapshot.snapshotId())
        reader = self.spark.read.format("iceberg").option("snapshot-id", sid)
        got = reader.load(self.name(table)).select("id", "cat", "note", "_file", "_pos").collect()
        rows = sorted(
            ([r["id"], r["cat"], r["note"]] for r in got),
            key=lambda r: tuple((v is None, v) for v in r),
        )
        live: dict[str, set[int]] = {}
        for r in got:
            live.setdefault(r["_file"], set()).add(int(r["_pos"]))
        entries_df = (
            self.spark.read.format("iceberg")
            .option("snapshot-id", sid)
            .load(self.name(table) + ".entries")
            .where("status != 2")
        )
        present = set(entries_df.schema["data_file"].dataType.names)
        fields = [f for f in ENTRY_FIELDS if f in present]  # no partition when unpartitioned
        entries = entries_df.selectExpr(
            "status",
            "snapshot_id",
            "sequence_number",
            "file_sequence_number",
            *(f"data_file.{f}" for f in fields),
        ).collect()
        data_files, delete_files = [], []
        for e in entries:
            d = e.asDict(recursive=True)
            d["status"] = {0: "EXISTING", 1: "ADDED"}[d["status"]]
            d.setdefault("partition", {})
            if d["content"] == 0:
                d["deleted_positions"] = sorted(
                    set(range(d["record_count"])) - live.get(d["file_path"], set())
                )
                data_files.append(d)
            else:
                delete_files.append(d)
        data_files.sort(key=lambda d: d["file_path"])
        delete_files.sort(key=lambda d: (d["file_path"], d["referenced_data_file"] or ""))
        summary = dict(snapshot.summary())
        return {
            "snapshot_id": sid,
            "parent_id": None if snapshot.parentId() is None else int(snapshot.parentId()),
            "sequence_number": int(snapshot.sequenceNumber()),
            "operation": snapshot.operation(),
            "step": label,
            "summary": {k: v for k, v in summary.items() if k not in ("spark.app.id", "app-id")},
            "row_count": len(rows),
            "sum_id": sum(r[0] for r in rows),
            "rows": rows,
            "data_files": data_files,
            "delete_files": delete_files,
        }

    def describe_table(self, table: str) -> dict[str, Any]:
        jtable = self.load(table)
        meta = jtable.operations().current()
        labels = dict(self.steps[table])
        snapshots = [
            self.describe_snapshot(table, s, labels.get(int(s.snapshotId()), "?"))
            for s in jtable.snapshots()
        ]
        kinds = sorted(
            {
                {1: "dv" if f["file_format"] == "PUFFIN" else "position", 2: "equality"}[
                    f["content"]
                ]
                for s in snapshots
                for f in s["delete_files"]
            }
        )
        return {
            **self.tables[table],
            "identifier": f"{NAMESPACE}.{table}",
            "format_version": int(meta.formatVersion()),
            "metadata_location": meta.metadataFileLocation(),
            "current_snapshot_id": snapshots[-1]["snapshot_id"] if snapshots else None,
            "columns": [f.name() for f in jtable.schema().columns()],
            "schema": jtable.schema().toString(),
            "specs": {int(k): v.toString() for k, v in dict(jtable.specs()).items()},
            "delete_kinds": kinds,
            "snapshots": snapshots,
        }

    def run(self) -> dict[str, Any]:
        t0 = time.monotonic()
        self.position_delete_tables()
        self.spec_evolution_table()
        self.deletion_vector_tables()
        self.equality_unpartitioned()
        self.equality_partitioned()
        self.copy_on_write_control()
        self.imported_with_name_mapping()
        tables = {t: self.describe_table(t) for t in self.tables}
        return {
            "fixtures_version": FIXTURES_VERSION,
            "generated_by": {
                "iceberg": self.jvm.org.apache.iceberg.IcebergBuild.version(),
                "spark": self.spark.version,
                "seconds": round(time.monotonic() - t0, 1),
            },
            "catalog": {
                "name": CATALOG,
                "namespace": NAMESPACE,
                "sqlite_file": self.db,
                "warehouse": self.warehouse,
            },
            "tables": tables,
        }


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = os.path.abspath(sys.argv[1])
    if os.path.exists(out) and os.listdir(out):
        sys.exit(f"{out} exists and is not empty")
    os.makedirs(out, exist_ok=True)
    fixtures = Fixtures(out)
    try:
        expected = fixtures.run()
    finally:
        fixtures.spark.stop()
    tmp = os.path.join(out, "expected.json.tmp")
    with open(tmp, "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(out, "expected.json"))
    for name, t in expected["tables"].items():
        counts = " ".join(str(s["row_count"]) for s in t["snapshots"])
        print(
            f"{name:28s} v{t['format_version']} {','.join(t['delete_kinds']) or '-':18s} {counts}"
        )


if __name__ == "__main__":
    main()
