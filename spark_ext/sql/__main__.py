"""The catalog plugin's precompiled jar, from the command line.

``python -m lakecat.spark_ext.sql build-jar`` compiles the Java plugin with the JDK's
``javac --release 17`` against the installed PySpark and writes ``lakecat-spark-catalog.jar``
and its manifest beside :mod:`lakecat.spark_ext.sql.jar` (in an editable install: the source
tree, where git tracks them). ``python -m lakecat.spark_ext.sql check-jar`` exits 1, saying
why, unless that jar fits the Java sources and the installed PySpark's major.minor version
(``.ci/run`` runs it); it needs no Java.
"""

from __future__ import annotations

import argparse
import sys

from lakecat.spark_ext.sql import jar


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lakecat.spark_ext.sql")
    parser.add_argument("command", choices=["build-jar", "check-jar"])
    args = parser.parse_args(argv)
    if args.command == "build-jar":
        manifest = jar.ship_jar()
        print(
            f"wrote {jar.SHIPPED_DIR / jar.SHIPPED_JAR_NAME} (PySpark {manifest.pyspark_version}, "
            f"sources {manifest.source_sha256[:16]}, {manifest.javac})"
        )
        return 0
    mismatch = jar.shipped_jar_mismatch(
        jar.SHIPPED_DIR,
        source_sha256=jar.source_digest(jar.java_sources()),
        pyspark=jar.pyspark_version(),
    )
    if mismatch is not None:
        print(f"error: {mismatch}", file=sys.stderr)
        return 1
    print(f"{jar.SHIPPED_DIR / jar.SHIPPED_JAR_NAME} fits PySpark {jar.pyspark_version()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
