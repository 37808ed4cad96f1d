"""The catalog plugin's jar: the precompiled one that ships when it fits the Java sources and the
running PySpark (a Java runtime is then enough), compiled with ``javac`` into the cache when it
does not, and a clear error when it does not fit and there is no JDK."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

import pyspark

from lakecat.metadata.errors import LakecatError
from lakecat.spark_ext import JavaCompilerNotFound, catalog_jar
from lakecat.spark_ext.sql import jar as jar_module
from lakecat.spark_ext.sql.__main__ import main as jar_command
from lakecat.spark_ext.sql.jar import (
    SHIPPED_DIR,
    SHIPPED_JAR_NAME,
    JarManifest,
    find_javac,
    java_sources,
    ship_jar,
    shipped_jar_mismatch,
    source_digest,
)

HERE = Path(__file__).parent
CURRENT_SOURCES = source_digest(java_sources())


def fake_shipped(folder: Path, **changes: str) -> Path:
    """A shipped jar in ``folder`` that fits this PySpark and these sources, but for
    ``changes`` to its manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    jar = folder / SHIPPED_JAR_NAME
    jar.write_bytes(b"not really a jar")
    fields = {
        "source_sha256": CURRENT_SOURCES,
        "jar_sha256": hashlib.sha256(jar.read_bytes()).hexdigest(),
        "pyspark_version": pyspark.__version__,
        "java_release": 17,
        "javac": "javac 17.0.0",
        **changes,
    }
    JarManifest(**fields).write(folder / jar_module.SHIPPED_MANIFEST_NAME)
    return jar


@pytest.fixture
def no_jdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))


def other_patch_release() -> str:
    major, minor = pyspark.__version__.split(".")[:2]
    return f"{major}.{minor}.99"


def test_a_shipped_jar_that_fits_is_used_without_a_jdk(tmp_path, monkeypatch, no_jdk) -> None:
    # a PySpark patch release other than the one it was compiled against still fits
    shipped = fake_shipped(tmp_path / "shipped", pyspark_version=other_patch_release())
    monkeypatch.setattr(jar_module, "SHIPPED_DIR", shipped.parent)

    assert catalog_jar(cache_dir=tmp_path / "cache") == str(shipped)
    assert not (tmp_path / "cache").exists()  # nothing compiled


@pytest.mark.parametrize(
    ("manifest", "why"),
    [
        ({"pyspark_version": "3.5.1"}, "compiled for PySpark 3.5.1 and this is PySpark"),
        ({"source_sha256": "0" * 64}, "Java sources under .* changed since"),
        ({"jar_sha256": "0" * 64}, "is not the one its manifest describes"),
        (None, "no precompiled catalog jar ships with this install"),
        ("{not json", "manifest .* is unreadable"),
        ('{"source_sha256": "x"}', "manifest .* is unreadable"),
    ],
)
def test_without_a_jdk_a_shipped_jar_that_does_not_fit_says_why_and_what_to_install(
    tmp_path, monkeypatch, no_jdk, manifest, why
) -> None:
    folder = tmp_path / "shipped"
    if isinstance(manifest, dict):
        fake_shipped(folder, **manifest)
    elif isinstance(manifest, str):
        fake_shipped(folder)
        (folder / jar_module.SHIPPED_MANIFEST_NAME).write_text(manifest)
    else:
        folder.mkdir()
    monkeypatch.setattr(jar_module, "SHIPPED_DIR", folder)

    with pytest.raises(JavaCompilerNotFound, match="JDK 17") as raised:
        catalog_jar(cache_dir=tmp_path / "cache")

    assert isinstance(raised.value, LakecatError)
    assert raised.value.shipped_jar_mismatch is not None
    assert re.search(why, raised.value.shipped_jar_mismatch)
    assert raised.value.shipped_jar_mismatch in str(raised.value)
    assert "lakecat.spark_ext.register" in str(raised.value)  # the data source needs no JDK
    if manifest == {"pyspark_version": "3.5.1"}:
        assert "install pyspark==3.5.*" in str(raised.value)


def test_the_committed_jar_was_built_from_the_current_java_sources() -> None:
    manifest = JarManifest.read(SHIPPED_DIR / jar_module.SHIPPED_MANIFEST_NAME)

    assert manifest.source_sha256 == CURRENT_SOURCES, (
        "the Java sources changed: rebuild the jar (python -m lakecat.spark_ext.sql build-jar)"
    )
    assert manifest.java_release == 17
    with zipfile.ZipFile(SHIPPED_DIR / SHIPPED_JAR_NAME) as archive:
        classes = {name for name in archive.namelist() if "$" not in name}
    expected = {f"lakecat/spark/{path.stem}.class" for path in java_sources()}
    assert expected <= classes


def test_check_jar_fails_saying_why_when_the_shipped_jar_does_not_fit(
    tmp_path, monkeypatch, capsys
) -> None:
    fake_shipped(tmp_path, pyspark_version="3.5.1")
    monkeypatch.setattr(jar_module, "SHIPPED_DIR", tmp_path)
    assert jar_command(["check-jar"]) == 1
    assert "compiled for PySpark 3.5.1" in capsys.readouterr().err

    fake_shipped(tmp_path, pyspark_version=other_patch_release())
    assert jar_command(["check-jar"]) == 0


def needs_a_jdk() -> None:
    try:
        find_javac()
    except JavaCompilerNotFound:
        pytest.skip("needs a JDK")


@pytest.mark.spark
def test_a_jar_that_does_not_fit_is_compiled_once_per_source_and_pyspark_version(
    tmp_path, monkeypatch
) -> None:
    needs_a_jdk()
    fake_shipped(tmp_path / "shipped", pyspark_version="3.5.1")
    monkeypatch.setattr(jar_module, "SHIPPED_DIR", tmp_path / "shipped")
    jar = catalog_jar(cache_dir=tmp_path / "cache")
    built = os.stat(jar).st_mtime_ns

    assert catalog_jar(cache_dir=tmp_path / "cache") == jar  # cached: not compiled again
    assert os.stat(jar).st_mtime_ns == built
    with zipfile.ZipFile(jar) as archive:
        assert "lakecat/spark/LakecatCatalog.class" in archive.namelist()
    assert Path(jar).parent.name == f"{pyspark.__version__}-{CURRENT_SOURCES[:16]}"


@pytest.mark.spark
def test_build_jar_writes_a_jar_that_fits_byte_for_byte_the_same_each_time(
    tmp_path, monkeypatch
) -> None:
    needs_a_jdk()
    first = ship_jar(tmp_path)
    jar_bytes = (tmp_path / SHIPPED_JAR_NAME).read_bytes()
    second = ship_jar(tmp_path)  # so a rebuild from unchanged sources leaves git clean

    assert second == first
    assert (tmp_path / SHIPPED_JAR_NAME).read_bytes() == jar_bytes
    assert first.pyspark_version == pyspark.__version__
    assert first.javac.startswith("javac ")
    assert (
        shipped_jar_mismatch(tmp_path, source_sha256=CURRENT_SOURCES, pyspark=first.pyspark_version)
        is None
    )
    assert (
        json.loads((tmp_path / jar_module.SHIPPED_MANIFEST_NAME).read_text())["java_release"] == 17
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [SHIPPED_JAR_NAME, jar_module.SHIPPED_MANIFEST_NAME]
    )  # no staging files left behind


def jre_only_environment(tmp_path: Path) -> dict[str, str]:
    """This process's environment with a Java runtime and no ``javac``: JAVA_HOME is a folder
    whose ``bin`` has only ``java``, and PATH is one folder of links to every program on PATH
    but ``java`` and ``javac``."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    assert java is not None  # spark_java found one
    jre = tmp_path / "jre"
    (jre / "bin").mkdir(parents=True)
    (jre / "bin" / "java").symlink_to(os.path.realpath(java))  # java finds its home from there
    programs = tmp_path / "bin"
    programs.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            link = programs / entry.name
            if entry.name in ("java", "javac") or link.is_symlink():
                continue
            if entry.is_file() and os.access(entry.path, os.X_OK):
                link.symlink_to(entry.path)
    return {
        **os.environ,
        "PATH": str(programs),
        "JAVA_HOME": str(jre),
        jar_module.JAR_CACHE_ENV: str(tmp_path / "cache"),
    }


@pytest.mark.spark
def test_with_only_a_java_runtime_spark_sql_runs_on_the_shipped_jar(spark_java, tmp_path) -> None:
    mismatch = shipped_jar_mismatch(
        SHIPPED_DIR, source_sha256=CURRENT_SOURCES, pyspark=pyspark.__version__
    )
    if mismatch is not None:
        # CI installs the PySpark the jar is for (and checks it): there, this must run
        (pytest.fail if os.environ.get("CI") == "true" else pytest.skip)(mismatch)

    done = subprocess.run(
        [sys.executable, str(HERE / "jre_session.py"), str(tmp_path / "lake")],
        env=jre_only_environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["jar"] == str(SHIPPED_DIR / SHIPPED_JAR_NAME)
    assert result["rows"] == [[1, "a"], [2, "b"]]
    assert not (tmp_path / "cache").exists()  # nothing compiled
