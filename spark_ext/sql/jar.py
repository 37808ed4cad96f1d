"""The catalog plugin's jar: shipped precompiled, compiled from its Java source when it must.

Spark resolves ``spark.sql.catalog.<name>`` to a JVM class, so lakecat ships a few small Java
classes (``spark_ext/sql/java/lakecat/spark/*.java``, glue only: every catalog operation is
answered in Python). They also ship compiled, as package data beside this module:
``lakecat-spark-catalog.jar`` (``javac --release 17`` against one PySpark's jars) and its
manifest ``lakecat-spark-catalog.json`` (:class:`JarManifest`: the SHA-256 of the Java sources
and of the jar, the PySpark version). Both are files in git, written by
``python -m lakecat.spark_ext.sql build-jar`` (:func:`ship_jar`); ``check-jar`` fails when
they no longer fit the sources, and ``.ci/run`` runs it against the PySpark it installs.
docs/spark-sql.md says why the jar is committed rather than built by a setuptools hook.

:func:`catalog_jar` returns the shipped jar when its manifest names the installed Java sources
and the running PySpark's major.minor version (Spark keeps the DSv2 interfaces the plugin
implements binary compatible across patch releases), so a Java runtime is enough. Otherwise it
compiles the sources with the JDK's ``javac --release 17`` against the installed PySpark's jars
into ``<cache>/<pyspark version>-<source hash>/lakecat-spark.jar``, where ``<cache>`` is
``$LAKECAT_SPARK_JAR_CACHE`` or ``~/.cache/lakecat/spark``. A file lock keeps parallel
processes from compiling at once; the jar appears with an atomic rename, so a reader never sees
half of one. Without a JDK :class:`JavaCompilerNotFound` says why the shipped jar does not fit
and what to install (the ``lakecat`` data source itself needs no jar).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

from lakecat.metadata.errors import LakecatError

JAR_CACHE_ENV = "LAKECAT_SPARK_JAR_CACHE"
JAR_NAME = "lakecat-spark.jar"
SOURCE_ROOT = Path(__file__).parent / "java"
JAVA_RELEASE = 17
# The precompiled jar and its manifest: package data in this folder (the source tree in an
# editable install). Read through the module attribute, so tests can point it elsewhere.
SHIPPED_DIR = Path(__file__).parent
SHIPPED_JAR_NAME = "lakecat-spark-catalog.jar"
SHIPPED_MANIFEST_NAME = "lakecat-spark-catalog.json"
# Zip entries carry this time, so that compiling the same classes gives the same jar bytes.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


class SparkCatalogError(LakecatError):
    """The Spark catalog plugin cannot be built or attached."""


class JavaCompilerNotFound(SparkCatalogError):
    """No ``javac`` (a JDK 17+) to compile the catalog plugin with, and no shipped jar fits.

    ``shipped_jar_mismatch`` says why the precompiled jar cannot be used (None when only
    :func:`find_javac` was asked).
    """

    def __init__(self, message: str, *, shipped_jar_mismatch: str | None = None) -> None:
        super().__init__(message)
        self.shipped_jar_mismatch = shipped_jar_mismatch


class CatalogJarBuildFailed(SparkCatalogError):
    """``javac`` rejected the catalog plugin's source (e.g. an unsupported PySpark)."""


@dataclass(frozen=True)
class JarManifest:
    """What a precompiled catalog jar was built from (``lakecat-spark-catalog.json``)."""

    source_sha256: str  # source_digest() of the Java sources
    jar_sha256: str  # of the jar file itself, so a jar without its manifest is noticed
    pyspark_version: str  # the PySpark whose jars it was compiled against
    java_release: int  # javac --release
    javac: str  # `javac -version` of the compiler, for information

    @classmethod
    def read(cls, path: Path) -> JarManifest:
        raw = json.loads(path.read_text(encoding="utf-8"))
        manifest = cls(**raw)  # TypeError for a missing or unknown key
        texts = (
            manifest.source_sha256,
            manifest.jar_sha256,
            manifest.pyspark_version,
            manifest.javac,
        )
        if not all(isinstance(text, str) for text in texts) or not isinstance(
            manifest.java_release, int
        ):
            raise ValueError(f"{path}: a value of the wrong type")
        return manifest

    def write(self, path: Path) -> None:
        staged = path.with_name(path.name + ".tmp")
        staged.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")
        os.replace(staged, path)


def catalog_jar(*, cache_dir: str | os.PathLike[str] | None = None) -> str:
    """The path of the catalog plugin's jar for the installed PySpark: the shipped one when it
    fits, else one compiled (once, then cached) with the JDK's ``javac``."""
    sources = java_sources()
    digest = source_digest(sources)
    version = pyspark_version()
    mismatch = shipped_jar_mismatch(SHIPPED_DIR, source_sha256=digest, pyspark=version)
    if mismatch is None:
        return str(SHIPPED_DIR / SHIPPED_JAR_NAME)
    cache = Path(cache_dir or os.environ.get(JAR_CACHE_ENV) or _default_cache())
    folder = cache / f"{version}-{digest[:16]}"
    jar = folder / JAR_NAME
    if jar.is_file():
        return str(jar)
    javac = find_javac(shipped_mismatch=mismatch)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not jar.is_file():  # another process may have built it while we waited
            _compile(javac, sources, jar)
    return str(jar)


def shipped_jar_mismatch(folder: Path, *, source_sha256: str, pyspark: str) -> str | None:
    """Why the precompiled jar in ``folder`` does not fit these Java sources and this PySpark
    version (a sentence ending with what would make it fit), or None when it does."""
    manifest_path = folder / SHIPPED_MANIFEST_NAME
    jar = folder / SHIPPED_JAR_NAME
    if not manifest_path.is_file() or not jar.is_file():
        return f"no precompiled catalog jar ships with this install ({folder})"
    try:
        manifest = JarManifest.read(manifest_path)
    except (OSError, ValueError, TypeError) as exc:  # JSONDecodeError is a ValueError
        return f"the precompiled catalog jar's manifest {manifest_path} is unreadable ({exc})"
    if manifest.source_sha256 != source_sha256:
        return (
            f"the Java sources under {SOURCE_ROOT} changed since the precompiled catalog jar was "
            "built (rebuild it: python -m lakecat.spark_ext.sql build-jar)"
        )
    if _file_sha256(jar) != manifest.jar_sha256:
        return (
            f"the precompiled catalog jar {jar} is not the one its manifest describes "
            "(rebuild it: python -m lakecat.spark_ext.sql build-jar)"
        )
    if _minor(manifest.pyspark_version) != _minor(pyspark):
        wanted = ".".join(_minor(manifest.pyspark_version))
        return (
            f"the precompiled catalog jar was compiled for PySpark {manifest.pyspark_version} "
            f"and this is PySpark {pyspark} (install pyspark=={wanted}.* to use it)"
        )
    return None


def ship_jar(folder: Path | None = None) -> JarManifest:
    """Compile the plugin against the installed PySpark and write the precompiled jar and its
    manifest into ``folder`` (by default :data:`SHIPPED_DIR`: in an editable install, the
    source tree, where git tracks them). Needs a JDK."""
    target = folder or SHIPPED_DIR
    javac = find_javac()
    sources = java_sources()
    jar = target / SHIPPED_JAR_NAME
    _compile(javac, sources, jar)
    version = subprocess.run([javac, "-version"], capture_output=True, text=True, check=False)
    manifest = JarManifest(
        source_sha256=source_digest(sources),
        jar_sha256=_file_sha256(jar),
        pyspark_version=pyspark_version(),
        java_release=JAVA_RELEASE,
        javac=(version.stdout or version.stderr).strip(),
    )
    manifest.write(target / SHIPPED_MANIFEST_NAME)
    return manifest


def find_javac(*, shipped_mismatch: str | None = None) -> str:
    """``$JAVA_HOME/bin/javac``, else ``javac`` on PATH; ``shipped_mismatch`` (why the
    precompiled jar does not fit) goes into the error when there is neither."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "javac"), os.X_OK):
        return os.path.join(home, "bin", "javac")
    found = shutil.which("javac")
    if found is None:
        why = f"{shipped_mismatch}; so " if shipped_mismatch else ""
        raise JavaCompilerNotFound(
            f"{why}the lakecat Spark catalog must be compiled, which needs a JDK "
            f"{JAVA_RELEASE} or newer (javac): install one (Debian/Ubuntu: apt-get install "
            "openjdk-17-jdk-headless) or set JAVA_HOME to it. The lakecat data source "
            "(lakecat.spark_ext.register) works without it.",
            shipped_jar_mismatch=shipped_mismatch,
        )
    return found


def java_sources() -> list[Path]:
    sources = sorted(SOURCE_ROOT.rglob("*.java"))
    if not sources:
        raise CatalogJarBuildFailed(f"no Java source under {SOURCE_ROOT}")
    return sources


def source_digest(sources: list[Path]) -> str:
    """SHA-256 over the sources' paths (relative to :data:`SOURCE_ROOT`) and contents, line
    endings normalised (a checkout with CRLF line endings has the same sources)."""
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.relative_to(SOURCE_ROOT).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes().replace(b"\r\n", b"\n"))
        digest.update(b"\0")
    return digest.hexdigest()


def pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def pyspark_jars() -> Path:
    import pyspark

    folder = Path(pyspark.__file__).parent / "jars"
    if not folder.is_dir():
        raise CatalogJarBuildFailed(f"PySpark has no jars folder at {folder}")
    return folder


def _minor(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _default_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lakecat" / "spark"


def _compile(javac: str, sources: list[Path], jar: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="lakecat-javac-", dir=jar.parent) as tmp:
        classes = Path(tmp) / "classes"
        command = [
            javac,
            "--release",
            str(JAVA_RELEASE),
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
        staged = Path(tmp) / jar.name
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as out:
            _add(out, "META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\r\n\r\n")
            for path in sorted(classes.rglob("*.class")):
                _add(out, path.relative_to(classes).as_posix(), path.read_bytes())
        os.replace(staged, jar)


def _add(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    entry = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    entry.compress_type = zipfile.ZIP_DEFLATED
    entry.external_attr = 0o644 << 16
    archive.writestr(entry, data)
