"""The tree's import rules, so that the layout stays what ``docs/architecture.md`` says:

* ``lakecat.metadata`` imports neither of the other packages; the catalog does not import the
  Spark integration;
* ``lakecat.spark_ext`` reaches the other two only through their public surfaces: the package
  ``lakecat.catalog`` and ``lakecat.catalog.engine``; ``lakecat.metadata`` and its subpackages
  (their ``__init__``), ``errors`` and ``properties``;
* inside ``lakecat.catalog`` the subpackages form layers (:data:`CATALOG_LAYERS`): a module
  imports only from its own layer and the ones below;
* no import cycle between modules (imports at module level, ``TYPE_CHECKING`` ones aside);
* every package folder is listed in ``pyproject.toml`` and names its public surface in
  ``__all__``.
"""

from __future__ import annotations

import ast
import importlib
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("catalog", "metadata", "spark_ext")
CATALOG_PUBLIC = {"lakecat.catalog", "lakecat.catalog.engine"}
METADATA_LEAVES = {"lakecat.metadata.errors", "lakecat.metadata.properties"}

# lowest first; the package root (its __init__) and engine sit above everything but the CLI
CATALOG_LAYERS = [
    {"about", "identifiers", "interrupts", "metadata_cache", "retry"},
    {"store"},
    {"commit"},
    {"views"},
    {"read"},
    {"write"},
    {"table"},
    {"maintenance"},
    {"catalog"},
    {"__init__", "engine"},
    {"cli"},
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return "lakecat." + ".".join(parts)


def _files(folder: str) -> list[Path]:
    files = sorted((ROOT / folder).rglob("*.py"))
    assert files, f"no modules in {folder}/"
    return files


def _imports(folder: str, *, module_level: bool = False) -> Iterator[tuple[str, str]]:
    """(importing module, imported module) for the package folder; every import (lazy ones
    included, ``TYPE_CHECKING`` ones not), or with ``module_level`` only those that run on
    import."""
    for path in _files(folder):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):  # annotations only: no dependency when the code runs
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                node.body = []
        nodes = _module_level(tree.body) if module_level else ast.walk(tree)
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield _module_name(path), alias.name
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                yield _module_name(path), node.module


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, (ast.If, ast.Try)):
            yield from _module_level([*node.body, *getattr(node, "orelse", [])])
            for handler in getattr(node, "handlers", []):
                yield from _module_level(handler.body)
        else:
            yield node


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


def _is_metadata_surface(module: str) -> bool:
    if module == "lakecat.metadata" or module in METADATA_LEAVES:
        return True
    parts = module.split(".")
    return len(parts) == 3 and (ROOT / "metadata" / parts[2] / "__init__.py").exists()


def test_the_spark_integration_uses_only_the_public_api_of_the_other_packages() -> None:
    wrong = [
        (f, m)
        for f, m in _imports("spark_ext")
        if (_under(m, "lakecat.catalog") and m not in CATALOG_PUBLIC)
        or (_under(m, "lakecat.metadata") and not _is_metadata_surface(m))
    ]
    assert wrong == []


def _catalog_layer(module: str) -> int:
    part = module.split(".")[2] if module.count(".") >= 2 else "__init__"
    for rank, layer in enumerate(CATALOG_LAYERS):
        if part in layer:
            return rank
    raise AssertionError(f"{module} is in no layer of CATALOG_LAYERS: add its folder there")


def test_the_catalog_subpackages_import_only_their_own_layer_and_the_ones_below() -> None:
    wrong = [
        (f, m)
        for f, m in _imports("catalog")
        if _under(m, "lakecat.catalog") and _catalog_layer(m) > _catalog_layer(f)
    ]
    assert wrong == []


def test_no_module_imports_itself_back_through_a_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for folder in PACKAGES:
        for f, m in _imports(folder, module_level=True):
            if _under(m, "lakecat"):
                graph.setdefault(f, set()).add(m)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    # a package importing its own submodules is not a cycle worth reporting
    real = [c for c in cycles if not all(_under(m, c[0]) or _under(c[0], m) for m in c)]
    assert real == []


def _package_folders() -> list[str]:
    return sorted(
        _module_name(p.parent / "__init__.py")
        for folder in PACKAGES
        for p in (ROOT / folder).rglob("__init__.py")
    )


def test_every_package_folder_is_installed() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = sorted(pyproject["tool"]["setuptools"]["packages"])
    assert listed == _package_folders()


@pytest.mark.parametrize("package", _package_folders())
def test_every_package_names_its_public_surface(package: str) -> None:
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    assert names, f"{package}/__init__.py has no __all__"
    assert [n for n in names if not hasattr(module, n)] == []


def test_the_engine_api_exports_every_name_it_lists() -> None:
    from lakecat.catalog import engine

    assert [n for n in engine.__all__ if not hasattr(engine, n)] == []
