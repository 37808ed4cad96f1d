"""A writer process for ``test_kill_stress``: random commits to one table until told to stop.

Run as ``python kill_writer.py URL WAREHOUSE STOP_FILE WRITER INCARNATION``. It says on stdout,
one ``os.write`` a line (a kill cannot split one):

* ``begin <tag> <kind> <ids...>`` before an operation (``tag`` also goes into the snapshot's
  summary as ``stress-op``, so the test can tell from the history which operations landed);
* ``ack <tag>`` once the operation's commit returned, ``failed <tag> <error>`` on a typed
  failure, ``failed <tag> nothing-to-commit`` for a delete that matched no row;
* ``at holding`` / ``at swapped`` when it holds the commit lock / right after its swap
  landed, then pauses a few milliseconds, so that the test's kills can aim at those moments.
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from lakecat.catalog import Catalog, Table
from lakecat.metadata.errors import LakecatError

PAUSE_S = 0.005


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())


class Announcing:
    """A table's operations that say when they hold the lock and when their swap landed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def swap(self, *, expected: str, new: str) -> None:
        self.inner.swap(expected=expected, new=new)
        say("at swapped")
        time.sleep(PAUSE_S)

    @contextlib.contextmanager
    def commit_lock(self, properties: Mapping[str, str], **kwargs: Any) -> Iterator[Any]:
        with self.inner.commit_lock(properties, **kwargs) as hold:
            if hold is not None:
                say("at holding")
                time.sleep(PAUSE_S)
            yield hold


def rows(writer: int, part: str, ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "writer": pa.array([writer] * len(ids), pa.int64()),
            "part": [part] * len(ids),
        }
    )


def main() -> None:
    url, warehouse, stop, writer, incarnation = sys.argv[1:6]
    w, inc = int(writer), int(incarnation)
    rng = random.Random(w * 1000 + inc)
    catalog = Catalog(url, warehouse=warehouse)
    own = f"w{w}"
    next_id = (w * 1000 + inc) * 100_000
    seq = 0
    while not os.path.exists(stop):
        seq += 1
        tag = f"{w}-{inc}-{seq}"
        kind = rng.choice(["shared", "shared", "own", "delete", "overwrite"])
        ids = list(range(next_id, next_id + rng.randint(1, 5)))
        next_id += 10
        if kind == "delete":
            ids = [next_id - rng.randint(0, 60)]  # the cutoff
        say(f"begin {tag} {kind} {' '.join(map(str, ids))}")
        props = {"snapshot_properties": {"stress-op": tag}}
        try:
            plain = catalog.load_table("db.k")
            table = Table(Announcing(plain._ops), plain.metadata, plain.metadata_location)  # type: ignore[arg-type]
            if kind == "shared":
                result = table.append(rows(w, "shared", ids), **props)
            elif kind == "own":
                result = table.append(rows(w, own, ids), **props)
            elif kind == "delete":
                result = table.delete(f"part = '{own}' AND id < {ids[0]}", **props)
            else:
                result = table.overwrite(rows(w, own, ids), f"part = '{own}'", **props)
            say(f"ack {tag}" if result is not None else f"failed {tag} nothing-to-commit")
        except LakecatError as exc:  # the test checks which (a conflict is never expected)
            say(f"failed {tag} {type(exc).__name__}")
    catalog.close()


if __name__ == "__main__":
    main()
