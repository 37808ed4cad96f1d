"""A scan's rows in the tools people use: pandas, polars, DuckDB.

Each library is an optional dependency (``pip install 'lakecat[pandas]'``, ``[polars]``,
``[duckdb]``), imported only when its method is called; without it the method raises
:class:`~lakecat.metadata.errors.UnsupportedFeature` saying what to install.

* pandas: the materialised Arrow table, converted by pyarrow.
* polars: a lazy frame over the scan. Collecting it streams the scan's batches; the columns
  the query selects are the only ones read (projection pushdown) and a row limit stops the
  reading early. Each collection reads the table again (at the scan's snapshot).
* DuckDB: a view on the caller's connection over an Arrow stream source (the Arrow PyCapsule
  stream interface): every query DuckDB runs on the view opens a new stream of the scan's
  batches (at the scan's snapshot) and reads it batch by batch, in bounded memory. DuckDB
  applies its projection and filters to the batches; the scan's own ``columns`` and filter are
  what is pushed into the read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from lakecat.metadata.errors import UnsupportedFeature, ValidationError

__all__ = ["ArrowStreamSource", "duckdb_view", "polars_lazy_frame", "require"]


def require(module: str, extra: str, method: str) -> Any:
    """The optional dependency ``module``, or :class:`UnsupportedFeature` naming the extra
    that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise UnsupportedFeature(
            f"{method} needs {module}, which is not installed: pip install 'lakecat[{extra}]'",
            feature=module,
        ) from exc


# A scan's batches: the columns to read (None: all), batch size
Batches = Callable[[list[str] | None, int | None], Iterator[pa.RecordBatch]]


def polars_lazy_frame(schema: pa.Schema, batches: Batches) -> Any:
    """A polars ``LazyFrame`` whose every collection reads ``batches`` afresh."""
    pl = require("polars", "polars", "to_polars")
    polars_schema = pl.DataFrame(schema.empty_table()).schema

    def source(
        with_columns: list[str] | None,
        predicate: Any,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[Any]:
        left = n_rows
        for batch in batches(with_columns, batch_size):
            if left is not None and left <= 0:
                return
            frame = pl.DataFrame(pa.Table.from_batches([batch]))
            if predicate is not None:
                frame = frame.filter(predicate)
            if left is not None:
                frame = frame.head(left)
                left -= frame.height
            yield frame

    return pl.io.plugins.register_io_source(
        source, schema=polars_schema, explain_name="lakecat scan"
    )


class ArrowStreamSource:
    """An Arrow PyCapsule stream source whose every stream is a new read: ``readers()`` gives
    a fresh ``RecordBatchReader`` each time a consumer (DuckDB) asks for a stream."""

    def __init__(self, schema: pa.Schema, readers: Callable[[], pa.RecordBatchReader]) -> None:
        self._schema = schema
        self._readers = readers

    def __arrow_c_schema__(self) -> Any:
        return self._schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self._readers().__arrow_c_stream__(requested_schema)


def duckdb_view(connection: Any, name: str, source: ArrowStreamSource) -> Any:
    """Register ``source`` as view ``name`` on the DuckDB ``connection``; the connection."""
    require("duckdb", "duckdb", "to_duckdb")
    if not isinstance(name, str) or not name:
        raise ValidationError(f"a DuckDB view needs a name, not {name!r}")
    return connection.register(name, source)
