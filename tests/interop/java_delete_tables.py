"""Iceberg Java for the interop tests' modules: small tables it writes, and its SQL, served to
``java_session.py``.

usage: ~/.cache/lakecat-peers/spark35/bin/python java_delete_tables.py

One Iceberg Java 1.10.2 JVM (PySpark 3.5.9, the peers' ``spark35`` venv) that stays up for the
test run: it reads one JSON command a line on stdin and answers each with one line ``@@ <json>``
on stdout (other output of Spark and the JVM is not prefixed). Each test module opens a folder
of its own, ``OUT_DIR``, with ``{"op": "open", "root": OUT_DIR}`` and names it as ``"root"`` in
every command after that; the folder gets a Spark session of its own on the one JVM
(``SparkSession.newSession``: its own SQL conf, catalogs and current namespace). The session
set-up and the writers of equality deletes are those of ``java_fixtures.py`` (imported), so the
tables sit in an Iceberg **JdbcCatalog** on SQLite, ``OUT_DIR/catalog.db``, catalog name
``peers``, namespace ``db``, warehouse ``OUT_DIR/warehouse``, where lakecat opens them with
``Catalog("sqlite:///OUT_DIR/catalog.db", warehouse="OUT_DIR/warehouse", name="peers")``.
Unlike the session fixtures of ``java_fixtures.py`` these tables belong to one test module,
which may write to them.

Commands (the answer of a failed command is ``{"error": "<type>: <message>"}``; every command
but ``open`` and ``quit`` carries ``"root": OUT_DIR``):

``{"op": "open", "root": OUT_DIR}``
    a session for a new catalog in the new folder ``OUT_DIR`` (made, with its namespace
    ``db``): ``{"done": true}``.
``{"op": "close", "root": OUT_DIR}``
    forgets that folder's session: ``{"done": true}``.
``{"op": "create"}``
    creates the tables below; answers ``{"tables": {name: {"snapshots": [ids, oldest
    first], "metadata_location": ...}}}``.
``{"op": "make", "table": name, "recipe": "pos_guarded" | "eq_guarded" | "v3_lineage"}``
    creates one more table ``name`` as the recipe's table was made; answers like ``create``,
    with that table only.
``{"op": "rows", "table": name, "options": {...}}``
    every row Iceberg Java reads (``spark.read.format("iceberg").options(...)``: ``branch``,
    ``snapshot-id``, ``start-snapshot-id``, ``end-snapshot-id``), as sorted ``[id, cat, note]``
    lists: ``{"rows": [...]}``.
``{"op": "eq_delete", "table": name, "ids": [...]}``
    commits an equality delete on ``id`` of those ids (a row delta): ``{"done": true}``.
``{"op": "lineage", "table": name, "options": {...}}``
    every row's ``[id, _row_id, _last_updated_sequence_number]`` as Iceberg Java reads them
    (format v3 row lineage), sorted by id: ``{"rows": [...]}``.
``{"op": "sql", "statement": "..."}``
    runs a Spark SQL statement (``{t:<name>}`` is not expanded: give full names,
    ``peers.db.<name>``): ``{"done": true}``.
``{"op": "query", "statement": "SELECT ..."}``
    runs a query and answers its rows, in order, as lists of JSON values: ``{"rows": [...]}``.
``{"op": "schema", "statement": "SELECT ..."}``
    the query's columns, without running it: ``{"columns": [[name, Spark type], ...]}``.
``{"op": "attempt", "statement": "..."}``
    runs a statement that may fail: ``{"failed": null}`` or ``{"failed": "<type>: <message>"}``.
``{"op": "quit"}``
    stops the session.

Values JSON cannot hold (timestamps, decimals, bytes) are answered as their ``str``.

All tables are format version 2, merge-on-read (``write.delete/update/merge.mode``), columns
``id`` (bigint; int in ``eq_*``), ``cat`` ('a', 'b', 'c', NULL by ``id % 4``), ``note``
('n<id>'). "INSERT a..b" inserts ids a to b.

========================= ====================================================================
table                     snapshots
========================= ====================================================================
pos_guarded               identity(cat): INSERT 1..20; INSERT 21..40; DELETE id%5=0 (position
                          deletes); INSERT 41..50. Refusal tests: must never change; ``make``
                          copies the recipe for tests that rewrite.
eq_guarded                unpartitioned: INSERT 1..40; equality delete on [id] 3, 4.
                          Refusal tests: must never change; ``make`` copies the recipe.
pos_append                unpartitioned: INSERT 1..20; DELETE id%3=0. lakecat appends.
eq_append                 unpartitioned: INSERT 1..20; equality delete on [id] 2, 7. lakecat
                          appends a row with id 2 again (newer: the delete must not apply).
pos_merge_on_commit       unpartitioned: INSERT 1..20; INSERT 21..30; DELETE id%4=0. lakecat
                          appends with manifest merging forced.
pos_expire                unpartitioned: INSERT 1..20; DELETE id%2=0; INSERT 21..30; DELETE
                          id=21. lakecat expires the old snapshots, removes orphans.
pos_manifests             unpartitioned: INSERT 1..10; INSERT 11..20; INSERT 21..30; DELETE
                          id%4=0; DELETE id=5. lakecat rewrites the manifests.
pos_whole                 identity(cat): INSERT 1..40; DELETE id%5=0. lakecat drops whole
                          partitions (delete, overwrite by filter, dynamic overwrite).
eq_whole                  unpartitioned: INSERT 1..20; equality delete on [id] 5. lakecat
                          overwrites the whole table (with id 5 among the new rows).
branches                  unpartitioned: INSERT 1..20 on main; branch ``dirty`` from it;
                          DELETE id=3 on ``dirty`` (position deletes on the branch only).
race                      unpartitioned: INSERT 1..10; INSERT 11..20 (two small files).
========================= ====================================================================
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

from java_fixtures import MOR, Fixtures, peer_session


class Tables(Fixtures):
    def delete_on(self, table: str, where: str) -> None:
        self.sql(table, "DELETE FROM {t} WHERE " + where)

    def eq_delete(self, table: str, ids: list[int]) -> None:
        self.row_delta(
            table,
            f"equality delete on [id] {ids}",
            lambda jt: [self.equality_delete_file(jt, ["id"], [{"id": i} for i in ids])],
        )

    def pos_guarded(self, t: str) -> None:
        self.create(t, version=2, props=MOR, partitioned_by="cat", description=t)
        self.insert_range(t, 1, 20)
        self.insert_range(t, 21, 40)
        self.delete_on(t, "id % 5 = 0")
        self.insert_range(t, 41, 50)

    def eq_guarded(self, t: str) -> None:
        self.create(t, version=2, props=MOR, id_type="INT", description=t)
        self.insert_range(t, 1, 40)
        self.eq_delete(t, [3, 4])

    def v3_lineage(self, t: str) -> None:
        """v3, merge-on-read: rows inherit their ids, then updates and a compaction copy them."""
        self.create(t, version=3, props=MOR, description=t)
        self.insert_range(t, 1, 20)
        self.insert_range(t, 21, 30)
        self.sql(t, "UPDATE {t} SET note = concat('u', note) WHERE id % 7 = 0")
        self.delete_on(t, "id = 3")
        self.sql(
            t,
            "CALL peers.system.rewrite_data_files(table => 'db." + t + "', "
            "options => map('min-input-files', '1'))",
        )
        self.sql(t, "UPDATE {t} SET note = 'again' WHERE id = 5")
        self.insert_range(t, 31, 35)

    def make(self, table: str, recipe: str) -> dict[str, Any]:
        if recipe not in ("pos_guarded", "eq_guarded", "v3_lineage"):
            raise ValueError(f"unknown recipe {recipe!r}")
        getattr(self, recipe)(table)
        return {"tables": {table: self.describe(table)}}

    def describe(self, name: str) -> dict[str, Any]:
        jtable = self.load(name)
        return {
            "snapshots": [int(s.snapshotId()) for s in jtable.snapshots()],
            "metadata_location": jtable.operations().current().metadataFileLocation(),
        }

    def create_all(self) -> dict[str, Any]:
        self.pos_guarded("pos_guarded")
        self.eq_guarded("eq_guarded")

        t = "pos_append"
        self.create(t, version=2, props=MOR, description=t)
        self.insert_range(t, 1, 20)
        self.delete_on(t, "id % 3 = 0")

        t = "eq_append"
        self.create(t, version=2, props=MOR, id_type="INT", description=t)
        self.insert_range(t, 1, 20)
        self.eq_delete(t, [2, 7])

        t = "pos_merge_on_commit"
        self.create(t, version=2, props=MOR, description=t)
        self.insert_range(t, 1, 20)
        self.insert_range(t, 21, 30)
        self.delete_on(t, "id % 4 = 0")

        t = "pos_expire"
        self.create(t, version=2, props=MOR, description=t)
        self.insert_range(t, 1, 20)
        self.delete_on(t, "id % 2 = 0")
        self.insert_range(t, 21, 30)
        self.delete_on(t, "id = 21")

        t = "pos_manifests"
        self.create(t, version=2, props=MOR, description=t)
        self.insert_range(t, 1, 10)
        self.insert_range(t, 11, 20)
        self.insert_range(t, 21, 30)
        self.delete_on(t, "id % 4 = 0")
        self.delete_on(t, "id = 5")

        t = "pos_whole"
        self.create(t, version=2, props=MOR, partitioned_by="cat", description=t)
        self.insert_range(t, 1, 40)
        self.delete_on(t, "id % 5 = 0")

        t = "eq_whole"
        self.create(t, version=2, props=MOR, id_type="INT", description=t)
        self.insert_range(t, 1, 20)
        self.eq_delete(t, [5])

        t = "branches"
        self.create(t, version=2, props=MOR, description=t)
        self.insert_range(t, 1, 20)
        self.spark.sql(f"ALTER TABLE {self.name(t)} CREATE BRANCH dirty")
        self.spark.sql(f"DELETE FROM {self.name(t)}.branch_dirty WHERE id = 3")

        t = "race"
        self.create(t, version=2, props=MOR, description=t)
        self.insert_range(t, 1, 10)
        self.insert_range(t, 11, 20)

        return {"tables": {name: self.describe(name) for name in self.tables}}

    def rows(self, table: str, options: dict[str, Any]) -> dict[str, Any]:
        reader = self.spark.read.format("iceberg")
        for key, value in options.items():
            reader = reader.option(key, str(value))
        got = reader.load(self.name(table)).select("id", "cat", "note").collect()
        rows = sorted(
            ([r["id"], r["cat"], r["note"]] for r in got),
            key=lambda r: tuple((v is None, v) for v in r),
        )
        return {"rows": rows}

    def lineage(self, table: str, options: dict[str, Any]) -> dict[str, Any]:
        reader = self.spark.read.format("iceberg")
        for key, value in options.items():
            reader = reader.option(key, str(value))
        got = (
            reader.load(self.name(table))
            .select("id", "_row_id", "_last_updated_sequence_number")
            .collect()
        )
        return {"rows": sorted([r[0], r[1], r[2]] for r in got)}

    def answer(self, command: dict[str, Any]) -> dict[str, Any]:
        op = command.get("op")
        if op == "create":
            return self.create_all()
        if op == "make":
            return self.make(command["table"], command["recipe"])
        if op == "eq_delete":
            self.eq_delete(command["table"], list(command["ids"]))
            return {"done": True}
        if op == "lineage":
            return self.lineage(command["table"], command.get("options") or {})
        if op == "rows":
            return self.rows(command["table"], command.get("options") or {})
        if op == "sql":
            self.spark.sql(command["statement"]).collect()
            return {"done": True}
        if op == "query":
            return {"rows": [list(r) for r in self.spark.sql(command["statement"]).collect()]}
        if op == "schema":
            fields = self.spark.sql(command["statement"]).schema.fields
            return {"columns": [[f.name, f.dataType.simpleString()] for f in fields]}
        if op == "attempt":
            try:
                self.spark.sql(command["statement"]).collect()
            except Exception as exc:  # the caller compares failures
                return {"failed": one_line(exc)}
            return {"failed": None}
        raise ValueError(f"unknown command {op!r}")


def one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:2000]


def reply(answer: dict[str, Any]) -> None:
    sys.stdout.write("@@ " + json.dumps(answer, default=str) + "\n")
    sys.stdout.flush()


def main() -> None:
    if len(sys.argv) != 1:
        sys.exit(__doc__)
    base = peer_session()  # the JVM; each folder's session is a new session of this one
    folders: dict[str, Tables] = {}
    try:
        reply({"ready": True})
        for line in sys.stdin:
            if not line.strip():
                continue
            command = json.loads(line)
            op = command.get("op")
            if op == "quit":
                reply({"done": True})
                break
            try:
                root = os.path.abspath(command["root"])
                if op == "open":
                    os.makedirs(root, exist_ok=True)
                    folders[root] = Tables(root, base=base)
                    reply({"done": True})
                elif op == "close":
                    del folders[root]
                    reply({"done": True})
                else:
                    tables = folders[root]
                    tables.activate()
                    reply(tables.answer(command))
            except Exception as exc:  # the test reads the error; the session stays up
                traceback.print_exc(file=sys.stderr)
                reply({"error": one_line(exc)})
    finally:
        base.stop()


if __name__ == "__main__":
    main()
