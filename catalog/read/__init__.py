"""Reading tables: scan planning over manifests (:mod:`~lakecat.catalog.read.scan`) and
incremental reads between two snapshots (:mod:`~lakecat.catalog.read.incremental`)."""

from lakecat.catalog.read.incremental import ChangeSet, changes
from lakecat.catalog.read.scan import Scan, ScanPlan

__all__ = ["ChangeSet", "Scan", "ScanPlan", "changes"]
