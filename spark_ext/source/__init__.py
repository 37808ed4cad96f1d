"""The ``lakecat`` PySpark data source: the driver plans (:mod:`.planning`, :mod:`.filters`) and
commits (:mod:`.write_jobs`, :mod:`.staging`), executors read and write files (:mod:`.tasks`);
:mod:`.datasource` is the Python Data Source API surface and :mod:`.streaming` its streams."""

from lakecat.spark_ext.source.datasource import LakecatDataSource, register

__all__ = ["LakecatDataSource", "register"]
