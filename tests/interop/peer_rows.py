"""Read Iceberg tables row by row with one peer engine (run by that peer's own interpreter).

usage: "$PEERS_HOME/pyice/bin/python"   peer_rows.py pyiceberg JOBS.jsonl
       "$PEERS_HOME/duck/bin/python"    peer_rows.py duckdb    JOBS.jsonl
       "$PEERS_HOME/spark35/bin/python" peer_rows.py spark     JOBS.jsonl

JOBS.jsonl: one JSON object a line: ``{"key": any, "metadata": path or file URI,
"snapshot": id or null, "columns": ["id", ...]}``.
prints one JSON line per job, in order: ``{"key": ..., "rows": [[v, ...], ...]}`` (the rows
sorted, values as JSON) or ``{"key": ..., "error": "<one line>"}``.

Unlike the peers' ``batch_peer.py`` (count and sum only), this returns every row, so a test
can compare the exact rows a peer reads with what Iceberg Java read. DuckDB gets a fresh
connection per job: one internal error invalidates a DuckDB database for good. ``spark`` is
Iceberg Java (one session for all jobs), which also reads the v3 row lineage columns
``_row_id`` and ``_last_updated_sequence_number``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

PEERS_SCRIPTS = os.environ.get("PEERS_SCRIPTS", "/work/shared/peers")
Reader = Callable[[str, "int | None", list[str]], list[list[Any]]]


def one_line(e: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())[:400]


def sort_key(row: list[Any]) -> tuple[tuple[bool, Any], ...]:
    return tuple((v is None, v) for v in row)


def pyiceberg_reader() -> Reader:
    from pyiceberg.table import StaticTable

    def read(path: str, snapshot: int | None, columns: list[str]) -> list[list[Any]]:
        table = StaticTable.from_metadata(path)
        if snapshot is not None and table.metadata.snapshot_by_id(snapshot) is None:
            raise ValueError(f"snapshot {snapshot} not found")
        scan = table.scan(snapshot_id=snapshot, selected_fields=tuple(columns))
        t = scan.to_arrow().select(columns)
        return [list(r) for r in zip(*(t.column(c).to_pylist() for c in columns), strict=True)]

    return read


def duckdb_reader() -> Reader:
    sys.path.insert(0, PEERS_SCRIPTS)
    from peer_duckdb import connect

    def read(path: str, snapshot: int | None, columns: list[str]) -> list[list[Any]]:
        if path.startswith("file://"):
            path = path[len("file://") :]
        elif path.startswith("file:"):
            path = path[len("file:") :]
        lit = "'" + path.replace("'", "''") + "'"
        cols = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
        con = connect()
        # DuckDB 1.5.5's iceberg extension reads a deletion vector that shares its Puffin file
        # with another through the external file cache, from the wrong offset when the cache
        # holds an earlier read of that file (duckdb-iceberg#1182, fixed in later releases)
        con.execute("SET enable_external_file_cache = false")
        try:
            args = lit
            if snapshot is not None:
                snaps = con.execute(f"SELECT snapshot_id FROM iceberg_snapshots({lit})").fetchall()
                if snapshot not in {r[0] for r in snaps}:
                    raise ValueError(f"snapshot {snapshot} not found")
                args += f", snapshot_from_id => {int(snapshot)}"
            return [
                list(r) for r in con.execute(f"SELECT {cols} FROM iceberg_scan({args})").fetchall()
            ]
        finally:
            con.close()

    return read


def spark_reader() -> Reader:
    sys.path.insert(0, PEERS_SCRIPTS)
    import peer_spark

    spark = peer_spark.session()

    def read(path: str, snapshot: int | None, columns: list[str]) -> list[list[Any]]:
        reader = spark.read.format("iceberg")
        if snapshot is not None:
            reader = reader.option("snapshot-id", str(snapshot))
        return [list(r) for r in reader.load(path).select(*columns).collect()]

    return read


def main() -> None:
    peer, jobs = sys.argv[1], sys.argv[2]
    readers = {"pyiceberg": pyiceberg_reader, "duckdb": duckdb_reader, "spark": spark_reader}
    read = readers[peer]()
    with open(jobs) as f:
        for line in f:
            if not line.strip():
                continue
            job = json.loads(line)
            try:
                rows = read(job["metadata"], job.get("snapshot"), job["columns"])
                try:
                    rows = sorted(rows, key=sort_key)
                except TypeError:  # values that do not compare (structs, maps): by their text
                    rows = sorted(rows, key=lambda r: json.dumps(r, default=str))
                out: dict[str, Any] = {"key": job["key"], "rows": rows}
            except Exception as e:  # one line per failed job; the batch goes on
                out = {"key": job["key"], "error": one_line(e)}
            print(json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    main()
