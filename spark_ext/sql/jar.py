"""The catalog plugin's jar: compiled from the shipped Java source on first use, then cached.

Spark resolves ``spark.sql.catalog.<name>`` to a JVM class, so lakecat ships a few small Java
classes (``spark_ext/java/lakecat/spark/*.java``, glue only: every catalog operation is
answered in Python). :func:`catalog_jar` compiles them with the JDK's ``javac --release 17``
against the installed PySpark's jars into
``<cache>/<pyspark version>-<source hash>/lakecat-spark.jar``, where ``<cache>`` is
``$LAKECAT_SPARK_JAR_CACHE`` or ``~/.cache/lakecat/spark``. A file lock keeps parallel
processes from compiling at once; the jar appears with an atomic rename, so a reader never sees
half of one. Without a JDK :class:`JavaCompilerNotFound` says what to install (the ``lakecat``
data source itself needs no jar).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from lakecat.metadata.errors import LakecatError

JAR_CACHE_ENV = "LAKECAT_SPARK_JAR_CACHE"
JAR_NAME = "lakecat-spark.jar"
SOURCE_ROOT = Path(__file__).parent / "java"


class SparkCatalogError(LakecatError):
    """The Spark catalog plugin cannot be built or attached."""


class JavaCompilerNotFound(SparkCatalogError):
    """No ``javac`` (a JDK 17+) to compile the catalog plugin with."""


class CatalogJarBuildFailed(SparkCatalogError):
    """``javac`` rejected the catalog plugin's source (e.g. an unsupported PySpark)."""


def catalog_jar(*, cache_dir: str | os.PathLike[str] | None = None) -> str:
    """The path of the catalog plugin's jar for the installed PySpark, compiled if needed."""
    sources = sorted(SOURCE_ROOT.rglob("*.java"))
    if not sources:
        raise CatalogJarBuildFailed(f"no Java source under {SOURCE_ROOT}")
    folder = Path(cache_dir or os.environ.get(JAR_CACHE_ENV) or _default_cache()) / _build_key(
        sources
    )
    jar = folder / JAR_NAME
    if jar.is_file():
        return str(jar)
    javac = find_javac()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not jar.is_file():  # another process may have built it while we waited
            _compile(javac, sources, jar)
    return str(jar)


def find_javac() -> str:
    """``$JAVA_HOME/bin/javac``, else ``javac`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "javac"), os.X_OK):
        return os.path.join(home, "bin", "javac")
    found = shutil.which("javac")
    if found is None:
        raise JavaCompilerNotFound(
            "the lakecat Spark catalog is compiled on first use and needs a JDK 17 or newer "
            "(javac): install one (Debian/Ubuntu: apt-get install openjdk-17-jdk-headless) or "
            "set JAVA_HOME to it. The lakecat data source (lakecat.spark_ext.register) works "
            "without it."
        )
    return found


def pyspark_jars() -> Path:
    import pyspark

    folder = Path(pyspark.__file__).parent / "jars"
    if not folder.is_dir():
        raise CatalogJarBuildFailed(f"PySpark has no jars folder at {folder}")
    return folder


def _default_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lakecat" / "spark"


def _build_key(sources: list[Path]) -> str:
    import pyspark

    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.relative_to(SOURCE_ROOT).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return f"{pyspark.__version__}-{digest.hexdigest()[:16]}"


def _compile(javac: str, sources: list[Path], jar: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="lakecat-javac-", dir=jar.parent) as tmp:
        classes = Path(tmp) / "classes"
        command = [
            javac,
            "--release",
            "17",
            "-nowarn",
            "-encoding",
            "UTF-8",
            "-cp",
            str(pyspark_jars() / "*"),
            "-d",
            str(classes),
            *map(str, sources),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise CatalogJarBuildFailed(
                f"javac failed ({done.returncode}) compiling the lakecat Spark catalog:\n"
                f"{done.stderr.strip()}"
            )
        staged = Path(tmp) / JAR_NAME
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as out:
            out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        os.replace(staged, jar)
