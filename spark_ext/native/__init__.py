"""The native path (``lk.write`` / ``lk.read``): Spark's own Parquet writer and reader move
the rows, lakecat plans and commits. :mod:`.support` says whether a table and a read or write
qualify; :mod:`.columns` and :mod:`.partitions` map schemas and hidden partitions onto Spark
columns; :mod:`.write` and :mod:`.read` run the jobs; :mod:`.delta_rows` plans and describes
the new rows of merge-on-read SQL statements that the catalog plugin's tasks write."""

from lakecat.spark_ext.native.read import native_read_support, read
from lakecat.spark_ext.native.support import NativeSupport
from lakecat.spark_ext.native.write import native_write_support, write

__all__ = ["NativeSupport", "native_read_support", "native_write_support", "read", "write"]
