"""Where the ``lakecat`` command finds its catalog: flags, environment, config file.

Each setting (the catalog database URL, the warehouse, the catalog name) comes from the first
source that has it:

1. a command-line flag: ``--catalog URL``, ``--warehouse PATH_OR_URI``, ``--name NAME``;
2. an environment variable: ``LAKECAT_CATALOG_URL``, ``LAKECAT_WAREHOUSE``,
   ``LAKECAT_CATALOG_NAME``;
3. a TOML config file: ``--config FILE``, else ``$LAKECAT_CONFIG``, else ``./lakecat.toml``,
   else ``~/.config/lakecat/config.toml`` (the first that exists; a file named explicitly must
   exist)::

       [catalog]                  # used without --profile
       url = "sqlite:///lake/catalog.db"
       warehouse = "lake/warehouse"
       name = "lakecat"           # optional

       [catalogs.prod]            # used with --profile prod (or LAKECAT_PROFILE=prod)
       url = "postgresql+psycopg://me@db.example.com/lake"
       warehouse = "s3://bucket/warehouse"

       [catalogs.prod.properties] # object storage, pyiceberg's names (dotted keys work)
       s3.endpoint = "http://127.0.0.1:9000"
       s3.access-key-id = "..."
       s3.secret-access-key = "..."

   Relative local paths in a config file (the warehouse, a ``sqlite:///`` database) are taken
   relative to the file's folder, so a project's ``lakecat.toml`` works from any directory.

Catalog properties (object storage: ``s3.endpoint``, ``s3.access-key-id``, ...; see
:mod:`lakecat.metadata.io.storage`) come from the config section's ``properties`` table, each
overridden by a ``--property KEY=VALUE`` flag given before the command.

The name defaults to ``lakecat``. The warehouse is needed only to create a table without a
``--location``: listing and inspecting tables, whose locations are absolute, and changing them
work without one. Everything here is pure except reading the config file; the environment,
working directory and home directory are passed in.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lakecat.metadata.errors import ValidationError

__all__ = [
    "DEFAULT_CATALOG_NAME",
    "ENV_CATALOG_NAME",
    "ENV_CATALOG_URL",
    "ENV_CONFIG",
    "ENV_PROFILE",
    "ENV_WAREHOUSE",
    "CatalogSettings",
    "find_config_file",
    "read_config_properties",
    "read_config_section",
    "require_warehouse",
    "resolve_settings",
]

ENV_CATALOG_URL = "LAKECAT_CATALOG_URL"
ENV_WAREHOUSE = "LAKECAT_WAREHOUSE"
ENV_CATALOG_NAME = "LAKECAT_CATALOG_NAME"
ENV_CONFIG = "LAKECAT_CONFIG"
ENV_PROFILE = "LAKECAT_PROFILE"
DEFAULT_CATALOG_NAME = "lakecat"

_PROJECT_CONFIG = "lakecat.toml"
_USER_CONFIG = Path(".config") / "lakecat" / "config.toml"
_KEYS = ("url", "warehouse", "name", "properties")
_SQLITE_PREFIX = "sqlite:///"

_HOW_TO_CONFIGURE = (
    "pass --catalog URL --warehouse PATH, set LAKECAT_CATALOG_URL and LAKECAT_WAREHOUSE, "
    "or write [catalog] url = ... and warehouse = ... in ./lakecat.toml or "
    "~/.config/lakecat/config.toml"
)


@dataclass(frozen=True)
class CatalogSettings:
    """The resolved catalog settings, and the config file that contributed (if any)."""

    url: str
    warehouse: str | None  # None: tables can be created only at an explicit location
    name: str
    config_file: Path | None = None
    url_from: str | None = None  # where the URL came from ("--catalog", ...), for messages
    # storage properties (credentials among them): kept out of the repr
    properties: Mapping[str, str] = field(default_factory=dict, repr=False)


def require_warehouse(settings: CatalogSettings, *, or_else: str) -> str:
    """The configured warehouse; :class:`ValidationError` saying how to configure one, or to
    do ``or_else`` instead, when there is none."""
    if settings.warehouse is None:
        raise ValidationError(
            "no warehouse configured: pass --warehouse PATH_OR_URI, set "
            f"{ENV_WAREHOUSE}, add warehouse = ... to the config file, or {or_else}"
        )
    return settings.warehouse


def find_config_file(
    explicit: str | None, *, env: Mapping[str, str], cwd: Path, home: Path
) -> Path | None:
    """The config file to read: ``explicit``, ``$LAKECAT_CONFIG``, ``./lakecat.toml``, the
    user's ``~/.config/lakecat/config.toml``; ``None`` when none is named and none exists.

    A file named by the flag or the variable must exist (a typo should not silently fall back).
    """
    named = explicit or env.get(ENV_CONFIG)
    if named:
        path = (cwd / Path(named).expanduser()).resolve()
        if not path.is_file():
            source = "--config" if explicit else ENV_CONFIG
            raise ValidationError(f"config file {named} (from {source}) does not exist")
        return path
    for candidate in (cwd / _PROJECT_CONFIG, home / _USER_CONFIG):
        if candidate.is_file():
            return candidate
    return None


def read_config_section(path: Path, profile: str | None) -> dict[str, str]:
    """The ``[catalog]`` section of a config file, or ``[catalogs.<profile>]``, without its
    ``properties`` table (:func:`read_config_properties`).

    Unknown keys and non-string values are refused so that a typo is reported, not ignored.
    Relative local paths are made absolute against the file's folder.
    """
    section, where = _section(path, profile)
    values: dict[str, str] = {}
    for key, value in section.items():
        if key == "properties":
            continue
        if not isinstance(value, str) or not value:
            raise ValidationError(f"config file {path}: {where} {key} must be a non-empty string")
        values[key] = value
    return _anchor_paths(values, path.parent)


def read_config_properties(path: Path, profile: str | None) -> dict[str, str]:
    """The section's ``properties`` table as flat keys: ``s3.endpoint = "..."`` (a dotted
    key, which TOML nests) and ``"s3.endpoint" = "..."`` (a quoted one) both give
    ``s3.endpoint``. Values must be strings (booleans and numbers are accepted and written
    as text: ``s3.path-style-access = true``)."""
    section, where = _section(path, profile)
    table = section.get("properties", {})
    if not isinstance(table, dict):
        raise ValidationError(f"config file {path}: {where} properties must be a table")
    flat: dict[str, str] = {}
    _flatten(table, "", flat, f"config file {path}: {where} properties")
    return flat


def _flatten(table: Mapping[str, object], prefix: str, out: dict[str, str], where: str) -> None:
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            _flatten(value, f"{name}.", out, where)
        elif isinstance(value, bool):
            out[name] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            out[name] = str(value)
        else:
            raise ValidationError(f"{where}: {name} must be a string")


def _section(path: Path, profile: str | None) -> tuple[dict[str, object], str]:
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ValidationError(f"config file {path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ValidationError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    if profile is None:
        section = document.get("catalog", {})
        where = "[catalog]"
    else:
        profiles = document.get("catalogs", {})
        if not isinstance(profiles, dict) or profile not in profiles:
            known = ", ".join(sorted(profiles)) if isinstance(profiles, dict) else ""
            raise ValidationError(
                f"config file {path} has no profile [catalogs.{profile}]"
                + (f" (profiles: {known})" if known else "")
            )
        section = profiles[profile]
        where = f"[catalogs.{profile}]"
    if not isinstance(section, dict):
        raise ValidationError(f"config file {path}: {where} must be a table")
    unknown = sorted(set(section) - set(_KEYS))
    if unknown:
        raise ValidationError(
            f"config file {path}: unknown key(s) {', '.join(unknown)} in {where} "
            f"(allowed: {', '.join(_KEYS)})"
        )
    return section, where


def _anchor_paths(values: dict[str, str], folder: Path) -> dict[str, str]:
    out = dict(values)
    warehouse = out.get("warehouse")
    if warehouse and "://" not in warehouse and not warehouse.startswith("file:"):
        out["warehouse"] = str(folder / Path(warehouse).expanduser())
    url = out.get("url")
    if url and url.startswith(_SQLITE_PREFIX):
        database, sep, query = url[len(_SQLITE_PREFIX) :].partition("?")
        if database and database != ":memory:" and not os.path.isabs(database):
            out["url"] = f"{_SQLITE_PREFIX}{folder / database}{sep}{query}"
    return out


def resolve_settings(
    *,
    url: str | None,
    warehouse: str | None,
    name: str | None,
    config: str | None,
    profile: str | None,
    env: Mapping[str, str],
    cwd: Path,
    home: Path,
    properties: Mapping[str, str] | None = None,
) -> CatalogSettings:
    """Resolve the catalog settings from flags, then ``env``, then the config file;
    ``properties`` (the ``--property`` flags) override the file's, key by key.

    Raises :class:`ValidationError` naming the three ways to configure a catalog when the URL
    is found nowhere. The warehouse may be missing (see the module docstring).
    """
    profile = profile or env.get(ENV_PROFILE) or None
    path = find_config_file(config, env=env, cwd=cwd, home=home)
    if profile is not None and path is None:
        raise ValidationError(
            f"profile {profile!r} given but no config file found (use --config FILE, "
            f"{ENV_CONFIG}, ./lakecat.toml or ~/.config/lakecat/config.toml)"
        )
    from_file = read_config_section(path, profile) if path is not None else {}
    file_properties = read_config_properties(path, profile) if path is not None else {}
    resolved_url = url or env.get(ENV_CATALOG_URL) or from_file.get("url")
    resolved_warehouse = warehouse or env.get(ENV_WAREHOUSE) or from_file.get("warehouse")
    resolved_name = (
        name or env.get(ENV_CATALOG_NAME) or from_file.get("name") or DEFAULT_CATALOG_NAME
    )
    if not resolved_url and not resolved_warehouse:
        raise ValidationError(f"no catalog configured: {_HOW_TO_CONFIGURE}")
    if not resolved_url:
        raise ValidationError(
            "no catalog database URL configured: pass --catalog URL, set "
            f"{ENV_CATALOG_URL}, or add url = ... to the config file"
        )
    if url:
        url_from = "--catalog"
    elif env.get(ENV_CATALOG_URL):
        url_from = ENV_CATALOG_URL
    else:
        url_from = f"config file {path}"
    return CatalogSettings(
        resolved_url,
        resolved_warehouse or None,
        resolved_name,
        path,
        url_from=url_from,
        properties={**file_properties, **(properties or {})},
    )
