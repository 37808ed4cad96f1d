"""Row-level operations and compaction driven from Spark (``lk.delete``, ``lk.update``,
``lk.merge``, ``lk.compact``): Spark reads the affected files and computes the new rows
(:mod:`.merge_plan`), lakecat commits one snapshot with its conflict checks (:mod:`.row_ops`,
:mod:`.compaction`)."""

from lakecat.spark_ext.dml.compaction import compact
from lakecat.spark_ext.dml.row_ops import RowLevelResult, delete, merge, update

__all__ = ["RowLevelResult", "compact", "delete", "merge", "update"]
