"""Seeded random SQL scripts on one Iceberg table, for the differential tests that run them on
lakecat's Spark catalog and on Iceberg Java's (``test_random_scripts_with_iceberg_java.py``).

A script starts from a table of scalar columns (``id bigint, cat string, amount double``, a date,
a timestamp and a decimal) and nested ones (a struct ``info``, an array ``tags`` and a map
``props``) and changes it the ways
users do: inserts, deletes, updates and merges with conditions of many shapes, static and
whole-table overwrites, compactions, position delete rewrites, snapshot expiry, switching the
table between copy-on-write and merge-on-read, partition spec evolution, adding and dropping a
column (so a dropped column's values must not come back when a column of the same name is
added again), changing the struct column ``info`` (adding and dropping a field, widening one),
renaming columns (partition sources and struct fields too) and back, a branch and a tag, setting
main to the tagged snapshot, replacing the table by a query of its own rows (``REPLACE TABLE
... AS SELECT``, maybe with new partitioning) and ``TRUNCATE``. The generator tracks the
table's columns, their names and partition fields, so every statement is one both engines
accept; which engine runs a step is part of the script.

Each statement is a template: ``{t}`` is the table's full name, ``{c}`` the catalog,
``{name}`` the table's name in namespace ``db``.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

CATS = ["'a'", "'b'", "'c'", "NULL"]
# Iceberg partition terms a script adds and drops (one time transform per column: Iceberg
# refuses two on one column)
TERMS = [
    "bucket(4, id)",
    "truncate(10, id)",
    "cat",
    "bucket(3, cat)",
    "days(ts)",
    "months(d)",
    "truncate(5, dec)",
    "bucket(2, d)",
    "bucket(2, info.qty)",
]
# The table's columns, created with the table; ``note`` comes and goes
COLUMNS = (
    "id bigint, cat string, amount double, d date, ts timestamp, dec decimal(9,2), "
    "info struct<qty: int, label: string>, tags array<string>, props map<string, int>"
)
TYPED = {
    "d": "DATE",
    "ts": "TIMESTAMP",
    "dec": "DECIMAL(9,2)",
    "info": "",  # the struct's type of the moment (_info_type)
    "tags": "ARRAY<STRING>",
    "props": "MAP<STRING, INT>",
}
# the struct ``info``'s fields (``extra double`` comes and goes): renamed as columns are
IN_INFO = ("qty", "label", "extra")
# The name a script may rename each column to (and back): the generator writes every statement
# with the names above, and :func:`_render` puts in the table's names of the moment
RENAMED = {
    "cat": "kind",
    "amount": "amt",
    "d": "dd",
    "ts": "tstamp",
    "dec": "price",
    "note": "memo",
    "info": "meta",
    "qty": "units",
    "label": "title",
    "extra": "more",
    "tags": "labels",
    "props": "attrs",
}
_NAMED = re.compile(r"\b(" + "|".join(RENAMED) + r")\b")


def initial_rows(table: str, rows: int) -> str:
    """The INSERT a script's table starts with: ``rows`` rows computed from their ids."""
    return f"INSERT INTO {table} {_from_range(0, rows, Shape())}"


def _from_range(lo: int, hi: int, shape: Shape) -> str:
    extra = ", 'extra', CAST(id * 0.25 AS DOUBLE)" if shape.extra else ""
    note = ", CAST(NULL AS STRING)" if shape.note else ""
    return (
        "SELECT id, CASE WHEN id % 3 = 0 THEN 'a' WHEN id % 3 = 1 THEN 'b' END, id * 1.5, "
        "date_add(DATE '2024-01-01', CAST(id * 5 AS INT)), "
        "timestamp_seconds(1704067200 + id * 25000), "
        "CAST(id * 1.25 AS DECIMAL(9,2)), "
        "IF(id % 11 = 5, NULL, named_struct('qty', CAST(id % 7 AS INT), "
        f"'label', IF(id % 4 = 0, NULL, IF(id % 2 = 1, 'u', 'v')){extra})), "
        "IF(id % 9 = 4, NULL, IF(id % 5 = 0, array(), array('p', IF(id % 2 = 0, 'q', 'r')))), "
        f"IF(id % 8 = 3, NULL, map('k1', CAST(id % 5 AS INT))){note} FROM range({lo}, {hi})"
    )


@dataclass
class Shape:
    """What the generator knows of the table: its optional column and partition fields."""

    note: bool = False  # the column ``note string``
    partition: list[str] = field(default_factory=list)  # Iceberg partition terms
    branch: bool = False  # the branch ``dev`` exists
    # main may have moved since ``dev`` was made or moved to it: a commit that rewrites no
    # row (a compaction, Iceberg Java's DELETE that matches nothing) commits on one engine
    # and not on the other, so the two tables' main and dev need not relate alike
    main_moved: bool = True
    tag: bool = False  # the tag ``v1`` exists
    widened: bool = False  # ``dec`` is a decimal(12,2)
    extra: bool = False  # ``info`` has the field ``extra double`` (after ``label``)
    long_qty: bool = False  # ``info.qty`` is a bigint
    # the partitioning was ever changed: files of other specs (kept, or back with the tag)
    # may hold rows of several of its partitions
    evolved: bool = False
    names: dict[str, str] = field(default_factory=dict)  # the renamed columns' names


def _render(text: str, names: dict[str, str]) -> str:
    """``text`` with the columns' names of the moment (``names``) in place of the generator's
    (the new name of a ``RENAME COLUMN`` is left as it is)."""
    head, to, new = text.partition(" TO ") if " RENAME COLUMN " in text else (text, "", "")
    return _NAMED.sub(lambda m: names.get(m.group(1), m.group(1)), head) + to + new


@dataclass(frozen=True)
class Step:
    engine: str  # "lakecat" or "java"
    statement: str
    check: str  # a condition to read the table with afterwards (a filter to prune by)
    branch: bool  # the branch ``dev`` exists afterwards (its rows are read too)
    # engine "python": the call of lakecat's Python API that does what ``statement`` does:
    # ("append", rows), ("delete", filter), ("update", {column: value or ("+", n)}, filter) or
    # ("merge", source rows, update?, delete-if filter or None, insert?), and the branch it
    # writes to
    python: tuple[Any, ...] = ()
    # engine "python": how many steps earlier its table handle was loaded (0: now). A stale
    # handle's call commits over the steps in between, as a concurrent writer does; it either
    # lands as if it ran now (the table is ``serializable``) or fails with a conflict
    lag: int = 0
    tag: bool = False  # the tag ``v1`` exists afterwards (its rows are read too)


def _cat(rng: random.Random) -> str:
    return rng.choice(CATS)


def _amount(rng: random.Random) -> str:
    return f"{rng.randrange(-40, 200) * 0.5}D"


def _date(rng: random.Random) -> str:
    return f"DATE '2024-{rng.randrange(1, 13):02}-{rng.randrange(1, 29):02}'"


def _ts(rng: random.Random) -> str:
    return (
        f"TIMESTAMP '2024-{rng.randrange(1, 13):02}-{rng.randrange(1, 29):02} "
        f"{rng.randrange(24):02}:{rng.choice(['00', '30', '59'])}:00'"
    )


def _dec(rng: random.Random) -> str:
    return f"{rng.randrange(-1000, 30000) / 100:.2f}BD"


def _note(rng: random.Random) -> str:
    return rng.choice(["'x'", "'y'", "NULL"])


def _info(rng: random.Random, shape: Shape) -> str:
    """A value of the struct ``info`` (NULL at times), as a ``named_struct``."""
    if rng.random() < 0.15:
        return "NULL"
    label = rng.choice(["'u'", "'v'", "'w'", "NULL"])
    extra = f", 'extra', {_maybe_null(rng, _amount(rng))}" if shape.extra else ""
    return f"named_struct('qty', {rng.randrange(-3, 12)}, 'label', {label}{extra})"


def _tags(rng: random.Random) -> str:
    return rng.choice(["NULL", "array()", "array('p')", "array('q', 'r')", "array('p', NULL)"])


def _props(rng: random.Random) -> str:
    return rng.choice(
        ["NULL", f"map('k1', {rng.randrange(5)})", f"map('k1', {rng.randrange(5)}, 'k2', 7)"]
    )


def _info_type(shape: Shape) -> str:
    qty = "BIGINT" if shape.long_qty else "INT"
    extra = ", extra: DOUBLE" if shape.extra else ""
    return f"STRUCT<qty: {qty}, label: STRING{extra}>"


def _maybe_null(rng: random.Random, value: str) -> str:
    return "NULL" if rng.random() < 0.15 else value


def predicate(rng: random.Random, shape: Shape, alias: str = "") -> str:
    """A condition on the table's columns (``alias.`` before each column)."""
    p = f"{alias}." if alias else ""
    k = rng.randrange(2, 8)
    lo = rng.randrange(0, 120)
    atoms = [
        f"{p}id % {k} = {rng.randrange(k)}",
        f"{p}id BETWEEN {lo} AND {lo + rng.randrange(1, 40)}",
        f"{p}id < {rng.randrange(0, 130)}",
        f"{p}id IN ({', '.join(str(rng.randrange(0, 140)) for _ in range(3))})",
        f"{p}cat = {rng.choice(CATS[:3])}",
        f"{p}cat IS NULL",
        f"{p}cat IN ('a', 'c')",
        f"{p}cat > 'a'",
        f"substr({p}cat, 1, 1) = 'b'",  # (LIKE 'b%': Iceberg 1.10 fails on a null partition)
        f"{p}amount > {_amount(rng)}",
        f"{p}amount IS NULL",
        f"NOT ({p}cat <=> 'b')",
        f"{p}d < {_date(rng)}",
        f"{p}d = {_date(rng)}",
        f"{p}d IS NULL",
        f"{p}ts >= {_ts(rng)}",
        f"{p}ts BETWEEN {_ts(rng)} AND {_ts(rng)}",
        f"month({p}ts) = {rng.randrange(1, 13)}",
        f"{p}dec > {_dec(rng)}",
        f"{p}dec <= {_dec(rng)}",
        f"{p}dec IS NULL",
        f"{p}info.qty > {rng.randrange(-2, 10)}",
        f"{p}info.qty IS NULL",
        f"{p}info IS NULL",
        f"{p}info.label = {rng.choice(['u', 'v', 'w'])!r}",
        f"{p}info.label IS NULL",
        f"array_contains({p}tags, {rng.choice(['p', 'q', 'r'])!r})",
        f"size({p}tags) > {rng.randrange(0, 2)}",
        f"{p}tags IS NULL",
        f"{p}props['k1'] >= {rng.randrange(5)}",
        f"{p}props IS NULL",
    ]
    if shape.extra:
        # (not ``info.extra IS NULL``: Iceberg Java 1.10.2 counts no null of a double in a
        # null struct, and prunes its own files' rows where ``info`` is null)
        atoms += [f"{p}info.extra > {_amount(rng)}"]
    if shape.note:
        atoms += [f"{p}note = 'x'", f"{p}note IS NULL"]
    return _combined(rng, atoms)


def _combined(rng: random.Random, atoms: list[str]) -> str:
    """One of the conditions ``atoms``, or (less often) two joined by AND or OR."""
    first = rng.choice(atoms)
    if rng.random() < 0.4:
        return f"({first} {rng.choice(['AND', 'OR'])} {rng.choice(atoms)})"
    return first


def _assignment(rng: random.Random, shape: Shape, alias: str = "", source: str = "") -> str:
    p = f"{alias}." if alias else ""
    choices = [
        f"{p}amount = {p}amount + 1",
        f"{p}amount = -{p}amount",
        f"{p}amount = {_amount(rng)}",
        f"{p}cat = {_cat(rng)}",
        f"{p}d = date_add({p}d, {rng.randrange(1, 90)})",
        f"{p}ts = {_maybe_null(rng, _ts(rng))}",
        f"{p}dec = {p}dec + 1",
        f"{p}info.qty = {p}info.qty + 1",
        f"{p}info.label = {rng.choice(['u', 'w'])!r}",
        f"{p}info = {_info(rng, shape)}",
        f"{p}tags = {_tags(rng)}",
        f"{p}props = {_props(rng)}",
    ]
    if source:
        choices += [
            f"{p}amount = {source}.amount",
            f"{p}cat = {source}.cat",
            f"{p}d = {source}.d",
            f"{p}info = {source}.info",
            f"{p}info.qty = {source}.info.qty",
            f"{p}tags = {source}.tags",
        ]
    if shape.extra:
        choices += [f"{p}info.extra = {_maybe_null(rng, _amount(rng))}"]
    if shape.note:
        choices += [f"{p}note = {_note(rng)}"]
    picked = rng.sample(choices, rng.randrange(1, 3))
    # the column each assigns (a struct's field and the struct are one)
    columns = [a.split(" = ")[0].removeprefix(p).split(".")[0] for a in picked]
    if len(set(columns)) < len(columns):  # one column assigned once
        picked = picked[:1]
    return ", ".join(picked)


def _columns(shape: Shape) -> str:
    return "id, cat, amount, d, ts, dec, info, tags, props" + (", note" if shape.note else "")


def _row(rng: random.Random, shape: Shape, id_: int) -> str:
    values = [
        f"{id_}L",
        _cat(rng),
        _amount(rng),
        _maybe_null(rng, _date(rng)),
        _maybe_null(rng, _ts(rng)),
        _maybe_null(rng, _dec(rng)),
        _info(rng, shape),
        _tags(rng),
        _props(rng),
    ] + ([_note(rng)] if shape.note else [])
    return "(" + ", ".join(values) + ")"


def _values(rng: random.Random, shape: Shape, ids: list[int]) -> str:
    """An inline relation of the table's columns, typed by casts (a column of NULLs)."""
    return _typed(", ".join(_row(rng, shape, i) for i in ids), shape)


def _typed(rows: str, shape: Shape) -> str:
    casts = "CAST(cat AS STRING) AS cat, CAST(amount AS DOUBLE) AS amount, " + ", ".join(
        f"CAST({c} AS {t or _info_type(shape)}) AS {c}" for c, t in TYPED.items()
    )
    if shape.note:
        casts += ", CAST(note AS STRING) AS note"
    return f"(SELECT id, {casts} FROM VALUES {rows} AS v({_columns(shape)}))"


def _insert(rng: random.Random, shape: Shape) -> str:
    if rng.random() < 0.5:
        ids = [rng.randrange(0, 140) for _ in range(rng.randrange(1, 7))]
        return f"INSERT INTO {{t}} SELECT * FROM {_values(rng, shape, ids)}"
    lo = rng.randrange(0, 150)
    return "INSERT INTO {t} " + _from_range(lo, lo + rng.randrange(1, 40), shape)


def _delete(rng: random.Random, shape: Shape) -> str:
    if rng.random() < 0.15:
        return (
            "DELETE FROM {t} WHERE id IN (SELECT id FROM {t} WHERE " + predicate(rng, shape) + ")"
        )
    return "DELETE FROM {t} WHERE " + predicate(rng, shape)


def _update(rng: random.Random, shape: Shape) -> str:
    where = "" if rng.random() < 0.1 else " WHERE " + predicate(rng, shape)
    return "UPDATE {t} SET " + _assignment(rng, shape) + where


def _merge(rng: random.Random, shape: Shape) -> str:
    ids = rng.sample(range(0, 160), rng.randrange(1, 12))  # distinct: one source row per id
    on = "t.id = s.id" + (" AND t.cat <=> s.cat" if rng.random() < 0.2 else "")
    clauses = []
    if rng.random() < 0.5:
        clauses.append(f"WHEN MATCHED AND {predicate(rng, shape, 's')} THEN DELETE")
    if rng.random() < 0.8:
        action = (
            "UPDATE SET *"
            if rng.random() < 0.2
            else "UPDATE SET " + _assignment(rng, shape, "t", "s")
        )
        clauses.append(f"WHEN MATCHED THEN {action}")
    if rng.random() < 0.7:
        cond = f" AND {predicate(rng, shape, 's')}" if rng.random() < 0.3 else ""
        clauses.append(f"WHEN NOT MATCHED{cond} THEN INSERT *")
    if rng.random() < 0.4:
        cond = predicate(rng, shape, "t")
        action = "DELETE" if rng.random() < 0.5 else "UPDATE SET " + _assignment(rng, shape, "t")
        clauses.append(f"WHEN NOT MATCHED BY SOURCE AND {cond} THEN {action}")
    if not clauses:
        clauses.append("WHEN NOT MATCHED THEN INSERT *")
    return f"MERGE INTO {{t}} t USING {_values(rng, shape, ids)} s ON {on} " + " ".join(clauses)


def _overwrite(rng: random.Random, shape: Shape) -> str:
    if shape.partition == ["cat"] and not shape.evolved and rng.random() < 0.7:
        # a static overwrite of the identity partition: the other columns are selected.
        # (Not after spec evolution: Iceberg Java refuses to delete a file of an older spec
        # that holds rows of the partition and others, which lakecat rewrites)
        cat = rng.choice(CATS[:3])
        note = ", 'y'" if shape.note else ""
        lo = rng.randrange(0, 150)
        return (
            f"INSERT OVERWRITE {{t}} PARTITION (cat = {cat}) SELECT id, id * 0.5, "
            f"DATE '2024-06-01', NULL, 1.5BD, CAST({_info(rng, shape)} AS {_info_type(shape)}), "
            f"array('o'), NULL{note} FROM range({lo}, {lo + rng.randrange(0, 6)})"
        )
    return "INSERT OVERWRITE {t} SELECT * FROM {t} WHERE " + predicate(rng, shape)


def _compact(rng: random.Random, shape: Shape) -> str:
    where = f", where => 'id < {rng.randrange(10, 150)}'" if rng.random() < 0.3 else ""
    sort = rng.choice(
        [
            "",
            "",
            ", strategy => 'sort', sort_order => 'amount DESC NULLS LAST, id'",
            ", strategy => 'sort', sort_order => 'zorder(id, d)'",
        ]
    )
    return (
        "CALL {c}.system.rewrite_data_files(table => 'db.{name}', "
        f"options => map('min-input-files', '1'){sort}{where})"
    )


def _rewrite_manifests(rng: random.Random, shape: Shape) -> str:
    return "CALL {c}.system.rewrite_manifests(table => 'db.{name}')"


def _write_order(rng: random.Random, shape: Shape) -> str:
    return rng.choice(
        [
            "ALTER TABLE {t} WRITE ORDERED BY id",
            "ALTER TABLE {t} WRITE LOCALLY ORDERED BY cat DESC NULLS LAST, amount",
            "ALTER TABLE {t} WRITE DISTRIBUTED BY PARTITION",
            "ALTER TABLE {t} WRITE UNORDERED",
        ]
    )


def _widen(rng: random.Random, shape: Shape) -> str | None:
    if shape.widened:
        return None
    shape.widened = True
    return "ALTER TABLE {t} ALTER COLUMN dec TYPE decimal(12,2)"


def _rewrite_deletes(rng: random.Random, shape: Shape) -> str:
    return "CALL {c}.system.rewrite_position_delete_files(table => 'db.{name}')"


def _expire(rng: random.Random, shape: Shape) -> str:
    return (
        "CALL {c}.system.expire_snapshots(table => 'db.{name}', "
        f"older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => {rng.randrange(1, 4)})"
    )


def _mode(rng: random.Random, shape: Shape) -> str:
    mode = rng.choice(["copy-on-write", "merge-on-read"])
    which = rng.sample(["delete", "update", "merge"], rng.randrange(1, 4))
    props = ", ".join(f"'write.{w}.mode' = '{mode}'" for w in which)
    return f"ALTER TABLE {{t}} SET TBLPROPERTIES ({props})"


def _partition(rng: random.Random, shape: Shape) -> str | None:
    shape.evolved = True
    free = [term for term in TERMS if term not in shape.partition]
    if shape.partition and (not free or rng.random() < 0.4):
        term = rng.choice(shape.partition)
        shape.partition.remove(term)
        return f"ALTER TABLE {{t}} DROP PARTITION FIELD {term}"
    if not free:
        return None
    term = rng.choice(free)
    shape.partition.append(term)
    return f"ALTER TABLE {{t}} ADD PARTITION FIELD {term}"


def _branch(rng: random.Random, shape: Shape) -> str:
    moved, shape.main_moved = shape.main_moved, False  # dev is made or moved to main, or goes
    if not shape.branch:
        shape.branch = True
        return "ALTER TABLE {t} CREATE BRANCH dev"
    if rng.random() < 0.3:
        shape.branch = False
        return "ALTER TABLE {t} DROP BRANCH dev"
    if rng.random() < 0.5 or moved:
        return "ALTER TABLE {t} REPLACE BRANCH dev"  # to main's current snapshot
    # main is an ancestor of dev (or is dev) on both tables
    return "CALL {c}.system.fast_forward(table => 'db.{name}', branch => 'main', to => 'dev')"


def _tag(rng: random.Random, shape: Shape) -> str:
    if shape.tag and rng.random() < 0.25:
        shape.tag = False
        return "ALTER TABLE {t} DROP TAG v1"
    shape.tag = True
    return "ALTER TABLE {t} CREATE OR REPLACE TAG v1"  # at main's current snapshot


def _restore(rng: random.Random, shape: Shape) -> str | None:
    """Main back (or forward) to the tagged snapshot, which need not be its ancestor."""
    if not shape.tag:
        return None
    return "CALL {c}.system.set_current_snapshot(table => 'db.{name}', ref => 'v1')"


def _replace(rng: random.Random, shape: Shape) -> str:
    """An atomic replace of the table by a query of its own rows, maybe with another
    partitioning (the table's history, branches and tags stay; main's sort order goes)."""
    before = shape.partition
    shape.partition = rng.sample(["cat", "bucket(4, id)", "days(ts)"], rng.randrange(0, 3))
    shape.evolved = shape.evolved or shape.partition != before
    partitioned = f" PARTITIONED BY ({', '.join(shape.partition)})" if shape.partition else ""
    head = rng.choice(["REPLACE TABLE", "CREATE OR REPLACE TABLE"])
    where = " WHERE " + predicate(rng, shape) if rng.random() < 0.7 else ""
    return f"{head} {{t}} USING iceberg{partitioned} AS SELECT * FROM {{t}}{where}"


def _truncate(rng: random.Random, shape: Shape) -> str:
    return "TRUNCATE TABLE {t}"


def _column(rng: random.Random, shape: Shape) -> str:
    shape.note = not shape.note
    if shape.note:
        return "ALTER TABLE {t} ADD COLUMN note string"
    shape.names.pop("note", None)  # added again as note
    return "ALTER TABLE {t} DROP COLUMN note"


def _nested(rng: random.Random, shape: Shape) -> str:
    """A change of the struct ``info``: its field ``extra`` added or dropped, or ``qty``
    widened to a bigint (once)."""
    if not shape.long_qty and rng.random() < 0.3:
        shape.long_qty = True
        return "ALTER TABLE {t} ALTER COLUMN info.qty TYPE bigint"
    shape.extra = not shape.extra
    if shape.extra:
        return "ALTER TABLE {t} ADD COLUMN info.extra double"
    shape.names.pop("extra", None)  # added again as extra
    return "ALTER TABLE {t} DROP COLUMN info.extra"


def _rename(rng: random.Random, shape: Shape) -> str:
    """A column (a partition source or a struct's field, maybe) renamed, or back."""
    present = {"note": shape.note, "extra": shape.extra}
    column = rng.choice([c for c in RENAMED if present.get(c, True)])
    new = column if column in shape.names else RENAMED[column]
    if new == column:
        del shape.names[column]
    else:
        shape.names[column] = new
    path = f"info.{column}" if column in IN_INFO else column
    return f"ALTER TABLE {{t}} RENAME COLUMN {path} TO {new}"


WEIGHTED = [
    (_insert, 4),
    (_delete, 4),
    (_update, 4),
    (_merge, 4),
    (_overwrite, 1),
    (_compact, 2),
    (_rewrite_deletes, 1),
    (_expire, 1),
    (_mode, 1),
    (_partition, 1),
    (_column, 1),
    (_branch, 1),
    (_rewrite_manifests, 1),
    (_write_order, 1),
    (_widen, 1),
    (_tag, 1),
    (_restore, 1),
    (_replace, 1),
    (_truncate, 0.3),
    (_rename, 1),
    (_nested, 1),
]
ON_BRANCH = ("INSERT INTO ", "DELETE FROM ", "UPDATE ", "MERGE INTO ")
# the statements that may commit to main (unless they write to ``{t}.branch_dev``)
MOVES_MAIN = (
    *ON_BRANCH,
    "INSERT OVERWRITE ",
    "REPLACE TABLE ",
    "CREATE OR REPLACE TABLE ",
    "TRUNCATE ",
    "CALL {c}.system.rewrite_",
    "CALL {c}.system.set_current_snapshot",
)


# ---- steps of lakecat's Python API (engine "python") ------------------------------------------
# Conditions written the same in Spark SQL and in lakecat's filter grammar
# (lakecat.metadata.expressions.parser): comparisons, BETWEEN, IN, IS NULL, AND and OR, with
# literals both read alike.


def _py_predicate(rng: random.Random, shape: Shape, alias: str = "") -> str:
    """A condition both grammars read alike; with ``alias``, ``alias.`` before each column
    (for SQL: lakecat's filter names the column alone)."""
    p = f"{alias}." if alias else ""
    lo = rng.randrange(0, 120)
    atoms = [
        f"{p}id < {rng.randrange(0, 130)}",
        f"{p}id BETWEEN {lo} AND {lo + rng.randrange(1, 40)}",
        f"{p}id IN ({', '.join(str(rng.randrange(0, 140)) for _ in range(3))})",
        f"{p}cat = {rng.choice(CATS[:3])}",
        f"{p}cat IS NULL",
        f"{p}cat IN ('a', 'c')",
        f"{p}amount > {rng.randrange(-40, 200) * 0.5}",
        f"{p}d < {_date(rng)}",
        f"{p}d >= {_date(rng)}",
        f"{p}d IS NULL",
        f"{p}ts >= {_ts(rng)}",
        f"{p}dec > {_dec(rng)[:-2]}",
        f"{p}dec IS NULL",
        f"{p}info.qty < {rng.randrange(-2, 10)}",
        f"{p}info.qty IS NULL",
        f"{p}info.label = {rng.choice(['u', 'v', 'w'])!r}",
    ]
    if shape.note:
        atoms += [f"{p}note = 'x'", f"{p}note IS NULL"]
    return _combined(rng, atoms)


def _literal(value: Any) -> str:
    """A Python value of a step's row as Spark SQL: a dict is a struct, a list of pairs a
    map, another list an array."""
    if value is None:
        return "NULL"
    if isinstance(value, dict):
        fields = ", ".join(f"'{k}', {_literal(v)}" for k, v in value.items())
        return f"named_struct({fields})"
    if isinstance(value, list):
        if value and isinstance(value[0], tuple):
            return "map(" + ", ".join(f"{_literal(k)}, {v}" for k, v in value) + ")"
        return "array(" + ", ".join(_literal(v) for v in value) + ")"
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, float):
        return f"{value}D"
    if isinstance(value, int):
        return f"{value}L"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value:%Y-%m-%d %H:%M:%S}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return f"{value}BD"  # Decimal


def _py_row(rng: random.Random, shape: Shape) -> dict[str, Any]:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.15 else value

    row = {
        "id": rng.randrange(0, 140),
        "cat": rng.choice(["a", "b", "c", None]),
        "amount": rng.randrange(-40, 200) * 0.5,
        "d": maybe(dt.date(2024, rng.randrange(1, 13), rng.randrange(1, 29))),
        "ts": maybe(
            dt.datetime(2024, rng.randrange(1, 13), rng.randrange(1, 29), rng.randrange(24), 30)
        ),
        "dec": maybe(Decimal(rng.randrange(-1000, 30000)) / 100),
        "info": maybe(
            {"qty": rng.randrange(-3, 12), "label": rng.choice(["u", "v", None])}
            | ({"extra": maybe(rng.randrange(-40, 200) * 0.5)} if shape.extra else {})
        ),
        "tags": rng.choice([None, [], ["p"], ["q", "r"]]),
        "props": rng.choice([None, [("k1", rng.randrange(5))], [("k1", 1), ("k2", 7)]]),
    }
    if shape.note:
        row["note"] = rng.choice(["x", "y", None])
    return row


def _python(rng: random.Random, shape: Shape, target: str) -> Step:
    """A step of lakecat's Python API, with the statement Iceberg Java runs on the control."""
    branch = "dev" if target.endswith(".branch_dev") else "main"
    kind = rng.choice(["append", "delete", "update", "merge"])
    if kind == "append":
        rows = [_py_row(rng, shape) for _ in range(rng.randrange(1, 6))]
        statement = f"INSERT INTO {target} SELECT * FROM {_py_values(rows, shape)}"
        return Step("python", statement, "", shape.branch, ("append", rows, branch))
    if kind == "merge":
        return _py_merge(rng, shape, target, branch)
    where = _py_predicate(rng, shape)
    if kind == "delete":
        statement = f"DELETE FROM {target} WHERE {where}"
        return Step("python", statement, "", shape.branch, ("delete", where, branch))
    info = {"qty": rng.randrange(12), "label": "z"} | ({"extra": 0.5} if shape.extra else {})
    choices: dict[str, Any] = {
        "amount": rng.choice([("+", 1.0), rng.randrange(-40, 200) * 0.5]),
        "cat": rng.choice(["a", "z", None]),
        "d": dt.date(2024, rng.randrange(1, 13), rng.randrange(1, 29)),
        "dec": Decimal(rng.randrange(0, 9000)) / 100,
        # a struct's and an array's whole value
        "info": rng.choice([None, info]),
        "tags": rng.choice([None, [], ["z"]]),
    }
    if shape.note:
        choices["note"] = rng.choice(["x", None])
    picked = {c: choices[c] for c in rng.sample(sorted(choices), rng.randrange(1, 3))}
    sets = ", ".join(
        f"{c} = {c} + {_literal(v[1])}" if isinstance(v, tuple) else f"{c} = {_literal(v)}"
        for c, v in picked.items()
    )
    statement = f"UPDATE {target} SET {sets} WHERE {where}"
    return Step("python", statement, "", shape.branch, ("update", picked, where, branch))


def _py_values(rows: list[dict[str, Any]], shape: Shape) -> str:
    values = ", ".join("(" + ", ".join(_literal(v) for v in r.values()) + ")" for r in rows)
    return _typed(values, shape)


def _py_merge(rng: random.Random, shape: Shape, target: str, branch: str) -> Step:
    """``Table.merge`` on ``id`` (source ids distinct), and its MERGE INTO: matched rows
    deleted where a condition on the target row holds, updated (every column), or both;
    unmatched source rows inserted."""
    rows = []
    for id_ in rng.sample(range(0, 150), rng.randrange(1, 8)):
        rows.append({**_py_row(rng, shape), "id": id_})
    update, insert = rng.random() < 0.7, rng.random() < 0.7
    delete_if = aliased = None
    if rng.random() < 0.4 or not update:
        state = rng.getstate()
        delete_if = _py_predicate(rng, shape)
        rng.setstate(state)
        aliased = _py_predicate(rng, shape, "t")  # the same condition on the target's columns
    clauses = []
    if aliased is not None:
        clauses.append(f"WHEN MATCHED AND {aliased} THEN DELETE")
    if update:
        clauses.append("WHEN MATCHED THEN UPDATE SET *")
    if insert:
        clauses.append("WHEN NOT MATCHED THEN INSERT *")
    statement = (
        f"MERGE INTO {target} t USING {_py_values(rows, shape)} s ON t.id = s.id "
        + " ".join(clauses)
    )
    call = ("merge", rows, update, delete_if, insert, branch)
    return Step("python", statement, "", shape.branch, call)


def _python_rendered(step: Step, names: dict[str, str]) -> Step:
    """A Python API step with the columns' names of the moment: in its statement, its rows,
    filters and assignments."""

    def render(value: Any) -> Any:
        if isinstance(value, str):
            return _render(value, names)
        if isinstance(value, dict):  # a row, a struct's value or an update's assignments
            return {names.get(k, k): render(v) for k, v in value.items()}
        if isinstance(value, list):
            return [render(v) for v in value]
        return value

    kind, *args = step.python
    return replace(
        step, statement=_render(step.statement, names), python=(kind, *map(render, args))
    )


def script(seed: int, steps: int, *, partition: str = "cat") -> list[Step]:
    """``steps`` random statements for a table created partitioned by ``partition`` (an
    Iceberg term, or "" for none), each with the engine that runs it; the same for a seed."""
    rng = random.Random(seed)
    shape = Shape(partition=[partition] if partition else [])
    makers = [m for m, _ in WEIGHTED]
    weights = [w for _, w in WEIGHTED]
    out: list[Step] = []
    while len(out) < steps:
        maker = rng.choices(makers, weights)[0]
        names = dict(shape.names)  # before a rename
        statement = maker(rng, shape)
        if statement is None:
            continue
        statement = _render(statement, names)
        if shape.branch and statement.startswith(ON_BRANCH) and rng.random() < 0.35:
            statement = statement.replace("{t}", "{t}.branch_dev", 1)  # the statement's target
        engine = rng.choice(["lakecat", "java", "python"])
        if engine == "python":
            if not statement.startswith(ON_BRANCH):
                engine = rng.choice(["lakecat", "java"])  # a DDL or procedure statement
            else:
                target = "{t}.branch_dev" if "{t}.branch_dev" in statement else "{t}"
                step = _python(rng, shape, target)
                lag = 0
                if target == "{t}" and rng.random() < 0.5:
                    # never over a DDL statement or an expiry (the handle's own metadata and
                    # snapshot stay valid): over writes and compactions, by either engine
                    while lag < min(3, len(out)) and not out[-1 - lag].statement.startswith(
                        ("ALTER", "CALL {c}.system.expire_snapshots")
                    ):
                        lag += 1
                    lag = rng.randint(0, lag)
                check = _render(predicate(rng, shape), shape.names)
                step = replace(_python_rendered(step, shape.names), check=check)
                out.append(replace(step, lag=lag, tag=shape.tag))
                shape.main_moved = shape.main_moved or target == "{t}"
                continue
        check = _render(predicate(rng, shape), shape.names)
        out.append(Step(engine, statement, check, shape.branch, tag=shape.tag))
        if statement.startswith(MOVES_MAIN) and "{t}.branch_dev" not in statement:
            shape.main_moved = True
    return out
