"""The packages' import directions: ``lakecat.metadata`` imports neither of the others, the
catalog does not import the Spark integration, and ``lakecat.spark_ext`` reaches the catalog
only through its public API (the package itself and ``lakecat.catalog.engine``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOG_PUBLIC = {"lakecat.catalog", "lakecat.catalog.engine"}


def _imports(folder: str) -> Iterator[tuple[str, str]]:
    """(file, imported module) for every import in the package folder, lazy ones included."""
    files = sorted((ROOT / folder).rglob("*.py"))
    assert files, f"no modules in {folder}/"
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield path.name, alias.name
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                yield path.name, node.module


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_format_package_imports_neither_the_catalog_nor_spark() -> None:
    wrong = [
        (f, m)
        for f, m in _imports("metadata")
        if _under(m, "lakecat.catalog") or _under(m, "lakecat.spark_ext")
    ]
    assert wrong == []


def test_the_catalog_does_not_import_the_spark_integration() -> None:
    assert [(f, m) for f, m in _imports("catalog") if _under(m, "lakecat.spark_ext")] == []


def test_the_spark_integration_uses_only_the_catalogs_public_api() -> None:
    wrong = [
        (f, m)
        for f, m in _imports("spark_ext")
        if _under(m, "lakecat.catalog") and m not in CATALOG_PUBLIC
    ]
    assert wrong == []


def test_the_engine_api_exports_every_name_it_lists() -> None:
    from lakecat.catalog import engine

    assert [n for n in engine.__all__ if not hasattr(engine, n)] == []
