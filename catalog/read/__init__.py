"""Reading tables: scan planning over manifests (:mod:`~lakecat.catalog.read.planning`), the
engine that reads the planned files (:mod:`~lakecat.catalog.read.reader`, streamed by
:mod:`~lakecat.catalog.read.read_ahead`), the scan API (:mod:`~lakecat.catalog.read.scan`:
Arrow, pandas, polars, DuckDB) and incremental reads between two snapshots
(:mod:`~lakecat.catalog.read.incremental`)."""

from lakecat.catalog.read.incremental import ChangeSet, changes
from lakecat.catalog.read.scan import Scan, ScanPlan
from lakecat.metadata.errors import ResultTooLarge

__all__ = ["ChangeSet", "ResultTooLarge", "Scan", "ScanPlan", "changes"]
