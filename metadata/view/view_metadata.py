"""The frozen model of an Iceberg view's metadata file (the view spec, format version 1).

A view is a stored query: its versions (each a query in one or more SQL dialects, the schema
it produces, the catalog and namespace that unqualified names in it resolve against), which
of them is current, the log of changes to the current version, and properties. Nothing here
mutates a :class:`ViewMetadata`; :func:`lakecat.metadata.view.apply.apply_view` returns a new
one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from lakecat.metadata.errors import CorruptMetadata, UnsupportedFeature
from lakecat.metadata.schema.schema import Schema

VIEW_FORMAT_VERSION = 1
SQL = "sql"


@dataclass(frozen=True, slots=True)
class SqlRepresentation:
    """A version's query in one SQL dialect (``spark``, ``trino``, ...)."""

    sql: str
    dialect: str

    def to_json(self) -> dict[str, Any]:
        return {"type": SQL, "sql": self.sql, "dialect": self.dialect}


@dataclass(frozen=True, slots=True)
class ViewVersion:
    """One definition of the view. Versions are immutable: a change adds a version."""

    version_id: int
    schema_id: int
    timestamp_ms: int
    representations: tuple[SqlRepresentation, ...]
    default_namespace: tuple[str, ...]
    default_catalog: str | None = None
    summary: Mapping[str, str] = field(default_factory=dict)
    # representations of a type other than "sql", kept as read so that a rewrite keeps them
    other_representations: tuple[Mapping[str, Any], ...] = ()

    def sql_for(self, dialect: str) -> SqlRepresentation | None:
        """The representation in ``dialect`` (compared without case), or None."""
        wanted = dialect.lower()
        return next((r for r in self.representations if r.dialect.lower() == wanted), None)

    @property
    def dialects(self) -> frozenset[str]:
        return frozenset(r.dialect.lower() for r in self.representations)

    def same_definition(self, other: ViewVersion) -> bool:
        """Equal but for the id and creation time (Java reuses such a version's id)."""
        return (
            self.schema_id == other.schema_id
            and self.representations == other.representations
            and self.other_representations == other.other_representations
            and self.default_namespace == other.default_namespace
            and self.default_catalog == other.default_catalog
            and dict(self.summary) == dict(other.summary)
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version-id": self.version_id,
            "timestamp-ms": self.timestamp_ms,
            "schema-id": self.schema_id,
            "summary": dict(self.summary),
        }
        if self.default_catalog is not None:
            out["default-catalog"] = self.default_catalog
        out["default-namespace"] = list(self.default_namespace)
        out["representations"] = [
            *(r.to_json() for r in self.representations),
            *(dict(r) for r in self.other_representations),
        ]
        return out

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> ViewVersion:
        sql: list[SqlRepresentation] = []
        other: list[Mapping[str, Any]] = []
        for r in obj["representations"]:
            if str(r["type"]).lower() == SQL:
                sql.append(SqlRepresentation(sql=_text(r["sql"]), dialect=_text(r["dialect"])))
            else:
                other.append(dict(r))
        summary = obj.get("summary") or {}
        if not isinstance(summary, Mapping):
            raise CorruptMetadata(f"view version summary must be an object: {summary!r}")
        catalog = obj.get("default-catalog")
        namespace = obj["default-namespace"]
        if not isinstance(namespace, list):
            raise CorruptMetadata(
                f"a view version's default-namespace must be a list: {namespace!r}"
            )
        return ViewVersion(
            version_id=int(obj["version-id"]),
            schema_id=int(obj["schema-id"]),
            timestamp_ms=int(obj["timestamp-ms"]),
            representations=tuple(sql),
            default_namespace=tuple(_text(p) for p in namespace),
            default_catalog=None if catalog is None else _text(catalog),
            summary={str(k): str(v) for k, v in summary.items()},
            other_representations=tuple(other),
        )


@dataclass(frozen=True, slots=True)
class ViewHistoryEntry:
    """When the current version became ``version_id``."""

    timestamp_ms: int
    version_id: int

    def to_json(self) -> dict[str, Any]:
        return {"timestamp-ms": self.timestamp_ms, "version-id": self.version_id}


@dataclass(frozen=True)
class ViewMetadata:
    view_uuid: str
    location: str
    current_version_id: int
    versions: tuple[ViewVersion, ...]
    version_log: tuple[ViewHistoryEntry, ...]
    schemas: tuple[Schema, ...]
    properties: Mapping[str, str] = field(default_factory=dict)
    format_version: int = VIEW_FORMAT_VERSION

    # ---- lookups ------------------------------------------------------------------------
    @cached_property
    def _versions_by_id(self) -> dict[int, ViewVersion]:
        return {v.version_id: v for v in self.versions}

    @cached_property
    def _schemas_by_id(self) -> dict[int, Schema]:
        return {s.schema_id: s for s in self.schemas}

    def version(self, version_id: int) -> ViewVersion:
        found = self._versions_by_id.get(version_id)
        if found is None:
            raise CorruptMetadata(f"view metadata has no version {version_id}")
        return found

    def has_version(self, version_id: int) -> bool:
        return version_id in self._versions_by_id

    @property
    def current_version(self) -> ViewVersion:
        return self.version(self.current_version_id)

    def schema_by_id(self, schema_id: int) -> Schema:
        found = self._schemas_by_id.get(schema_id)
        if found is None:
            raise CorruptMetadata(f"view metadata has no schema with id {schema_id}")
        return found

    def has_schema(self, schema_id: int) -> bool:
        return schema_id in self._schemas_by_id

    def schema(self) -> Schema:
        """The schema of the current version."""
        return self.schema_by_id(self.current_version.schema_id)

    # ---- JSON ---------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "view-uuid": self.view_uuid,
            "format-version": self.format_version,
            "location": self.location,
            "schemas": [s.to_json() for s in self.schemas],
            "current-version-id": self.current_version_id,
            "versions": [v.to_json() for v in self.versions],
            "version-log": [e.to_json() for e in self.version_log],
            "properties": dict(self.properties),
        }

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> ViewMetadata:
        """Parse a view metadata object; a malformed one is :class:`CorruptMetadata`, an
        unknown format version :class:`UnsupportedFeature`."""
        try:
            version = int(obj["format-version"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptMetadata(f"malformed view metadata: {exc!r}") from exc
        if version != VIEW_FORMAT_VERSION:
            raise UnsupportedFeature(
                f"view format version {version} is not supported (lakecat reads version "
                f"{VIEW_FORMAT_VERSION})"
            )
        try:
            properties = obj.get("properties") or {}
            metadata = ViewMetadata(
                view_uuid=_text(obj["view-uuid"]),
                location=_text(obj["location"]),
                current_version_id=int(obj["current-version-id"]),
                versions=tuple(ViewVersion.from_json(v) for v in obj["versions"]),
                version_log=tuple(
                    ViewHistoryEntry(int(e["timestamp-ms"]), int(e["version-id"]))
                    for e in obj["version-log"]
                ),
                schemas=tuple(Schema.from_json(s) for s in obj["schemas"]),
                properties={str(k): str(v) for k, v in properties.items()},
                format_version=version,
            )
        except CorruptMetadata:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptMetadata(f"malformed view metadata: {exc!r}") from exc
        metadata.schema()  # the current version and its schema must exist
        return metadata


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise CorruptMetadata(f"expected a string in view metadata, got {value!r}")
    return value
