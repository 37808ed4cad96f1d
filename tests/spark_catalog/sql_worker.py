"""A Spark SQL session in a process of its own, driven line by line (for the concurrency tests).

``python sql_worker.py <embedded catalog folder>`` starts a SparkSession with the lakecat
catalog attached as ``lake``, prints ``@@{"ready": true}`` and then runs one JSON command per
stdin line: ``{"sql": "...", "pause_before_commit": false}``, answering
``@@{"ok": true}`` or ``@@{"ok": false, "error": "..."}``. With ``pause_before_commit`` the
next commit this driver process makes (a ``DELETE FROM``: lakecat commits it here, in the
catalog bridge) first prints ``@@{"paused": true}`` and waits for a line on stdin, so that a
test can land another process's commit in between. Protocol lines start with ``@@``; anything
else on stdout is Spark's.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def say(message: dict[str, Any]) -> None:
    print("@@" + json.dumps(message), flush=True)


def small_session(root: str, master: str = "local[1]", driver_memory: str = "512m") -> Any:
    """A one-core SparkSession bound to 127.0.0.1 with the lakecat catalog of the embedded
    catalog folder ``root`` attached as ``lake`` (also used by ``jre_session.py`` and, on a
    ``local-cluster`` master, ``cluster_session.py``)."""
    import lakecat.spark_ext as lk
    from lakecat.catalog import Catalog

    return (
        lk.session("lake", catalog=Catalog.embedded(root))
        .master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "1")
        # a local-cluster's executors compile as the driver does (tests/conftest.py)
        .config("spark.executor.extraJavaOptions", os.environ.get("SPARK_SUBMIT_OPTS", ""))
        .getOrCreate()
    )


def main(root: str) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    import lakecat.catalog.table as table_module

    pause = {"next": False}
    commit_intent = table_module.commit_intent

    def paused_commit(*args: Any, **kwargs: Any) -> Any:
        if pause["next"]:
            pause["next"] = False
            say({"paused": True})
            sys.stdin.readline()
        return commit_intent(*args, **kwargs)

    table_module.commit_intent = paused_commit  # test hook: Table's commits go through it

    spark = small_session(root)
    spark.sparkContext.setLogLevel("ERROR")
    say({"ready": True})
    for line in sys.stdin:
        command = json.loads(line)
        pause["next"] = bool(command.get("pause_before_commit"))
        try:
            spark.sql(command["sql"]).collect()
        except Exception as exc:  # reported to the test, which asserts on it
            say({"ok": False, "error": str(exc)[:4000]})
        else:
            say({"ok": True})
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
