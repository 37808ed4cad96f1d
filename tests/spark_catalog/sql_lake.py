"""The test's lakecat catalog as the ``lake`` fixture hands it over (see ``conftest.py``).

In its own module, not in ``conftest.py``, so that tests can name the type: ``from conftest
import ...`` finds whichever ``conftest`` pytest imported first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lakecat.catalog import Catalog
from lakecat.metadata.io import local_path
from lakecat.spark_ext import CatalogBridge
from lakecat.spark_ext.native.write import session_conf


@dataclass
class Lake:
    """The test's lakecat catalog, attached to Spark as ``lake``."""

    root: Path
    catalog: Catalog
    spark: Any
    bridge: CatalogBridge

    @property
    def url(self) -> str:
        return self.catalog.uri

    def sql(self, statement: str) -> list[Any]:
        return self.spark.sql(statement).collect()

    def scan_line(self, query: str) -> str:
        """The ``BatchScan`` line of the query's physical plan (``EXPLAIN``)."""
        plan: str = self.spark.sql(f"EXPLAIN {query}").collect()[0][0]
        return next(line for line in plan.splitlines() if "BatchScan" in line)

    def read_statistics(self, query: str) -> Any:
        """The statistics (a JVM ``Statistics``) Spark's optimizer holds for the read of
        ``query`` (its plan's first leaf), with the cost-based optimizer on, which keeps row
        counts and column statistics."""
        with session_conf(self.spark, {"spark.sql.cbo.enabled": "true"}):
            plan = self.spark.sql(query)._jdf.queryExecution().optimizedPlan()
            return plan.collectLeaves().head().stats()

    def files_on_disk(self, table: Any) -> set[str]:
        """Every file under a (local) table's data folder, as local paths."""
        root = local_path(table.location)
        assert root is not None
        return {str(p) for p in Path(root, "data").rglob("*") if p.is_file()}

    def pyiceberg(self) -> Any:
        from pyiceberg.catalog.sql import SqlCatalog

        return SqlCatalog(self.catalog.name, uri=self.url, warehouse=self.catalog.warehouse)

    def rows(self, table: str, *columns: str, **scan: Any) -> list[tuple[Any, ...]]:
        """The table's rows through lakecat's Python API, sorted."""
        return sorted_rows(self.catalog.load_table(table).to_arrow(**scan), columns)

    def iceberg_rows(self, table: str, *columns: str, **scan: Any) -> list[tuple[Any, ...]]:
        """The table's rows through pyiceberg on the same catalog database, sorted."""
        py = self.pyiceberg()
        try:
            return sorted_rows(py.load_table(table).scan(**scan).to_arrow(), columns)
        finally:
            py.engine.dispose()


def sorted_rows(table: Any, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    names = columns or tuple(table.column_names)
    return sorted(zip(*(table.column(c).to_pylist() for c in names), strict=True))
