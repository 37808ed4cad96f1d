"""Which Hadoop file system Spark's writer uses for a native write into a local warehouse.

Hadoop's local file system (``LocalFileSystem``, a checksummed ``RawLocalFileSystem``) sets the
permission of every folder and file it makes by starting a ``chmod`` process when Hadoop's
native library is missing, as it is with the PySpark wheels: a dozen or more per write job,
each a few milliseconds of CPU, plus a ``.crc`` file beside each data file and a ``_SUCCESS``
marker, which the write then deletes: about a third of a small write's time
(``docs/benchmarks.md``, "Native writes into a local warehouse without ``chmod``").

So a native write into a local folder passes, as options of that write only (Spark builds a
file write's Hadoop configuration from the session's plus the writer's options):

* ``fs.file.impl`` = the plugin jar's ``lakecat.spark.LocalFiles``, a ``RawLocalFileSystem``
  that sets the same permissions (the umask of ``fs.permissions.umask-mode`` applied by
  Hadoop, as before) through ``java.nio`` and writes no checksum files, with
  ``fs.file.impl.disable.cache`` (Hadoop otherwise hands out its cached instance of the
  default class);
* ``mapreduce.fileoutputcommitter.marksuccessfuljobs`` = ``false``: no ``_SUCCESS`` file.

Only where every JVM of the write can load the class: the driver has it on its classpath and
the master is ``local`` (executors are the driver), or the jar is among the application's
jars (``SparkContext.addJar``, which attaching a catalog does). A session that sets
``spark.lakecat.localFileSystem`` to ``hadoop`` keeps Hadoop's own local file system (e.g.
for a ``fs.file.impl`` of its own); the default is ``lakecat``.
"""

from __future__ import annotations

from typing import Any

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.io import local_path
from lakecat.spark_ext.native.support import loadable_everywhere

LOCAL_FILES_CLASS = "lakecat.spark.LocalFiles"
LOCAL_FILE_SYSTEM_CONF = "spark.lakecat.localFileSystem"
_CHOICES = ("lakecat", "hadoop")


def local_write_options(spark: Any, folder: str) -> dict[str, str]:
    """The writer options of a native write into ``folder`` (above); none when the folder is
    not local, the session chose Hadoop's file system or a JVM of the write could not load
    ``LocalFiles``. A ``spark.lakecat.localFileSystem`` other than ``lakecat`` or ``hadoop``
    is a :class:`ValidationError`."""
    choice = str(spark.conf.get(LOCAL_FILE_SYSTEM_CONF, "lakecat")).strip().lower()
    if choice not in _CHOICES:
        raise ValidationError(
            f"{LOCAL_FILE_SYSTEM_CONF} is {choice!r}: it takes 'lakecat' (lakecat's local file "
            "system for native writes, the default) or 'hadoop' (Hadoop's own)"
        )
    if (
        choice == "hadoop"
        or local_path(folder) is None
        or not loadable_everywhere(spark.sparkContext, LOCAL_FILES_CLASS)
    ):
        return {}
    return {
        "fs.file.impl": LOCAL_FILES_CLASS,
        "fs.file.impl.disable.cache": "true",
        "mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
    }
