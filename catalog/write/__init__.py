"""Writing tables: data files for appends (:mod:`~lakecat.catalog.write.writer`), and the
plans of row-level changes, copy-on-write (:mod:`~lakecat.catalog.write.row_ops` for deletes
and overwrites by filter, :mod:`~lakecat.catalog.write.row_level` for update and merge)."""

from lakecat.catalog.write.writer import conform, write_files

__all__ = ["conform", "write_files"]
