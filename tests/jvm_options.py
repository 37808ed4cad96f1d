"""The JVM options of the test run's Spark and Iceberg Java processes (see ``conftest.py``)."""

from __future__ import annotations

import os
import re

# The short-lived JVMs of a test run (Iceberg Java's readers in interop/, the Spark sessions of
# worker processes, local-cluster executors) spend most of their CPU in the JIT's optimizing
# compiler (C2; 40 s of a fresh JVM's 55 s in a minute of SQL statements), so they compile with
# C1 only: spark-submit adds SPARK_SUBMIT_OPTS to the JVM it starts, and their processes inherit
# it (executors take it as spark.executor.extraJavaOptions, spark_catalog/sql_worker.py). The
# run's own session (``spark``, conftest.py) and Iceberg Java's session process
# (interop/java_session.py) live for the whole run: they keep C2 (with C1 only the whole suite
# took as long as before, 32:38 against 32:20). Every JVM collects garbage with the serial
# collector: on these small heaps and two cores G1's concurrent work costs more (160 statements
# on a warm session, two runs each: 34-35 s of the JVM's CPU against 40-44 s with G1, 27 s
# against 29-31 s of time; four Spark test modules: 142 s and 146 s against 145 s and 153 s).
# (setting, as a pattern of the options that choose it; the option the tests give it)
TEST_JVM_OPTIONS = (
    (r"TieredStopAtLevel", "-XX:TieredStopAtLevel=1"),
    (r"-XX:\+Use\w*GC\b", "-XX:+UseSerialGC"),
)
# for a long-lived JVM, after SPARK_SUBMIT_OPTS on its command line (the later flag wins)
LONG_LIVED_JVM_OPTIONS = "-XX:TieredStopAtLevel=4"  # the JVM's default


def add_test_jvm_options() -> None:
    """Appends each of ``TEST_JVM_OPTIONS`` to SPARK_SUBMIT_OPTS unless the user's own chooses
    that setting already."""
    given = os.environ.get("SPARK_SUBMIT_OPTS", "")
    added = [option for chosen, option in TEST_JVM_OPTIONS if not re.search(chosen, given)]
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join([given, *added]).strip()
