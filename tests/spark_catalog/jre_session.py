"""A Spark SQL session on the lakecat catalog in a process with a Java runtime and no JDK.

``python jre_session.py <embedded catalog folder>`` checks that ``javac`` is nowhere to be
found, takes ``catalog_jar()``, starts a session with ``lk.session`` and runs a CREATE, an
INSERT and a SELECT; it prints one JSON line: ``{"jar": ..., "rows": [[id, name], ...]}``.
``tests/spark_catalog/test_catalog_jar.py`` runs it with PATH and JAVA_HOME arranged so.
"""

from __future__ import annotations

import json
import os
import shutil
import sys


def main(root: str) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from sql_worker import small_session

    import lakecat.spark_ext as lk
    from lakecat.spark_ext.sql.jar import find_javac

    assert shutil.which("javac") is None, "javac is on PATH"
    try:
        found = find_javac()
    except lk.JavaCompilerNotFound:
        pass
    else:
        raise AssertionError(f"find_javac found {found}")
    jar = lk.catalog_jar()
    spark = small_session(root)
    try:
        spark.sparkContext.setLogLevel("ERROR")
        spark.sql("CREATE NAMESPACE lake.db")
        spark.sql("CREATE TABLE lake.db.t (id bigint, name string)")
        spark.sql("INSERT INTO lake.db.t VALUES (1, 'a'), (2, 'b')")
        rows = spark.sql("SELECT id, name FROM lake.db.t ORDER BY id").collect()
    finally:
        spark.stop()
    print(json.dumps({"jar": jar, "rows": [[row.id, row.name] for row in rows]}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
