"""The pure ``apply_view(base, updates)`` of view commits, and the updates that define a view.

The rules are those of Iceberg Java's ``ViewMetadata.Builder``, so that a view changed here
and there ends up the same:

* a schema of the same structure as a known one reuses its id; a new one gets the highest id
  plus one;
* a version of the same definition as a known one (all but id and time) reuses its id; a new
  one gets an id above every known one;
* making a version current logs it (with the version's own time when it was added in this
  change set, else ``now_ms``);
* a replacement must keep every SQL dialect of the version it replaces, unless the view's
  ``replace.drop-dialect.allowed`` is true;
* only the newest ``version.history.num-entries`` versions (default 10) are kept, plus the
  current one and those added in this change set; the version log is cut before the oldest
  entry whose version is gone.

Bad updates raise :class:`InvalidUpdate` and produce nothing.
"""

from __future__ import annotations

import uuid as uuid_module
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from lakecat.metadata.errors import InvalidUpdate, ValidationError
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.view.updates import (
    LAST_ADDED,
    AddViewSchema,
    AddViewVersion,
    AssignViewUUID,
    RemoveViewProperties,
    SetCurrentViewVersion,
    SetViewLocation,
    SetViewProperties,
    ViewUpdate,
)
from lakecat.metadata.view.view_metadata import (
    VIEW_FORMAT_VERSION,
    SqlRepresentation,
    ViewHistoryEntry,
    ViewMetadata,
    ViewVersion,
)

VERSION_HISTORY_SIZE = "version.history.num-entries"
VERSION_HISTORY_SIZE_DEFAULT = 10
REPLACE_DROP_DIALECT_ALLOWED = "replace.drop-dialect.allowed"
COMMENT = "comment"


def apply_view(
    base: ViewMetadata | None, updates: Iterable[ViewUpdate], *, now_ms: int
) -> ViewMetadata:
    """The view metadata after ``updates`` (``base`` None: a new view)."""
    builder = _Builder(base)
    for update in updates:
        builder.apply(update, now_ms)
    return builder.build()


def define_view(
    *,
    location: str,
    schema: Schema,
    representations: Sequence[SqlRepresentation],
    default_namespace: Sequence[str],
    default_catalog: str | None = None,
    properties: Mapping[str, str] | None = None,
    summary: Mapping[str, str] | None = None,
    now_ms: int,
    view_uuid: str | None = None,
) -> list[ViewUpdate]:
    """The updates that create a view with one version (id 1)."""
    return [
        AssignViewUUID(view_uuid or str(uuid_module.uuid4())),
        SetViewLocation(location),
        *([SetViewProperties(dict(properties))] if properties else []),
        *new_version_updates(
            None,
            schema=schema,
            representations=representations,
            default_namespace=default_namespace,
            default_catalog=default_catalog,
            summary=summary,
            now_ms=now_ms,
        ),
    ]


def new_version_updates(
    base: ViewMetadata | None,
    *,
    schema: Schema,
    representations: Sequence[SqlRepresentation],
    default_namespace: Sequence[str],
    default_catalog: str | None = None,
    summary: Mapping[str, str] | None = None,
    now_ms: int,
) -> list[ViewUpdate]:
    """The updates that make a new definition current: its schema, its version (id: one above
    the base's highest, as Java's replace numbers it) and the switch to it."""
    if not representations:
        raise ValidationError("a view version needs at least one query")
    highest = max((v.version_id for v in base.versions), default=0) if base else 0
    version = ViewVersion(
        version_id=highest + 1,
        schema_id=LAST_ADDED,
        timestamp_ms=now_ms,
        representations=tuple(representations),
        default_namespace=tuple(default_namespace),
        default_catalog=default_catalog,
        summary=dict(summary or {}),
    )
    return [AddViewSchema(schema), AddViewVersion(version), SetCurrentViewVersion(LAST_ADDED)]


class _Builder:
    """The mutable state of one :func:`apply_view` call (never escapes it)."""

    def __init__(self, base: ViewMetadata | None) -> None:
        self.base = base
        self.uuid = base.view_uuid if base else None
        self.location = base.location if base else None
        self.current_version_id = base.current_version_id if base else None
        self.versions: dict[int, ViewVersion] = (
            {v.version_id: v for v in base.versions} if base else {}
        )
        self.schemas: dict[int, Schema] = {s.schema_id: s for s in base.schemas} if base else {}
        self.history: list[ViewHistoryEntry] = list(base.version_log) if base else []
        self.properties: dict[str, str] = dict(base.properties) if base else {}
        self.added_versions: set[int] = set()
        self.last_added_schema: int | None = None
        self.last_added_version: int | None = None
        self.history_entry: ViewHistoryEntry | None = None

    def apply(self, update: ViewUpdate, now_ms: int) -> None:
        if isinstance(update, AssignViewUUID):
            if self.uuid is not None and self.uuid != update.uuid:
                raise InvalidUpdate(f"cannot reassign the view's uuid {self.uuid}")
            self.uuid = update.uuid
        elif isinstance(update, SetViewLocation):
            if not update.location:
                raise InvalidUpdate("a view location must not be empty")
            self.location = update.location.rstrip("/")
        elif isinstance(update, SetViewProperties):
            self.properties.update(update.updates)
        elif isinstance(update, RemoveViewProperties):
            for key in update.removals:
                self.properties.pop(key, None)
        elif isinstance(update, AddViewSchema):
            self._add_schema(update.schema)
        elif isinstance(update, AddViewVersion):
            self._add_version(update.version)
        elif isinstance(update, SetCurrentViewVersion):
            self._set_current(update.version_id, now_ms)
        else:  # pragma: no cover - the union is closed
            raise InvalidUpdate(f"unknown view update {update!r}")

    def _add_schema(self, schema: Schema) -> None:
        for known in self.schemas.values():
            if known.same_structure(schema):
                self.last_added_schema = known.schema_id
                return
        schema_id = max(self.schemas, default=-1) + 1
        self.schemas[schema_id] = Schema(schema.fields, schema_id, schema.identifier_field_ids)
        self.last_added_schema = schema_id

    def _add_version(self, version: ViewVersion) -> None:
        if version.schema_id == LAST_ADDED:
            if self.last_added_schema is None:
                raise InvalidUpdate("a view version names the last added schema, but none was")
            version = replace(version, schema_id=self.last_added_schema)
        if version.schema_id not in self.schemas:
            raise InvalidUpdate(f"a view version names unknown schema {version.schema_id}")
        dialects = [r.dialect.lower() for r in version.representations]
        if len(set(dialects)) != len(dialects):
            raise InvalidUpdate(f"a view version has two queries of one dialect: {dialects}")
        if not version.representations and not version.other_representations:
            raise InvalidUpdate("a view version needs at least one query")
        same = next((v for v in self.versions.values() if v.same_definition(version)), None)
        if same is not None:
            self.last_added_version = same.version_id
            return
        version_id = version.version_id
        if version_id in self.versions or version_id < 1:
            version_id = max(max(self.versions, default=0) + 1, 1)
        self.versions[version_id] = replace(version, version_id=version_id)
        self.added_versions.add(version_id)
        self.last_added_version = version_id

    def _set_current(self, version_id: int, now_ms: int) -> None:
        if version_id == LAST_ADDED:
            if self.last_added_version is None:
                raise InvalidUpdate("cannot set the last added view version: none was added")
            version_id = self.last_added_version
        version = self.versions.get(version_id)
        if version is None:
            raise InvalidUpdate(f"cannot set the current view version to unknown {version_id}")
        if version_id == self.current_version_id:
            return
        self.current_version_id = version_id
        at = version.timestamp_ms if version_id in self.added_versions else now_ms
        self.history_entry = ViewHistoryEntry(at, version_id)

    def build(self) -> ViewMetadata:
        if self.uuid is None:
            raise InvalidUpdate("a new view needs a uuid")
        if not self.location:
            raise InvalidUpdate("a view needs a location")
        if self.current_version_id is None:
            raise InvalidUpdate("a view needs a current version")
        history = [*self.history, *([self.history_entry] if self.history_entry else [])]
        current = self.versions[self.current_version_id]
        if self.base is not None and not _flag(self.properties, REPLACE_DROP_DIALECT_ALLOWED):
            dropped = self.base.current_version.dialects - current.dialects
            if dropped:
                raise InvalidUpdate(
                    f"the view's new version drops the queries of dialect(s) {sorted(dropped)} "
                    f"({REPLACE_DROP_DIALECT_ALLOWED}=false): give a query for each, or set "
                    "the property"
                )
        keep = max(
            len(self.added_versions | {self.current_version_id}), _history_size(self.properties)
        )
        versions = sorted(self.versions.values(), key=lambda v: v.version_id)
        if len(versions) > keep:
            newest = sorted((v.version_id for v in versions if v is not current), reverse=True)
            kept = {current.version_id, *newest[: keep - 1]}
            versions = [v for v in versions if v.version_id in kept]
            retained: list[ViewHistoryEntry] = []
            for entry in history:
                if entry.version_id in kept:
                    retained.append(entry)
                else:
                    retained.clear()  # the log is cut before a version that is gone
            history = retained
        return ViewMetadata(
            view_uuid=self.uuid,
            location=self.location,
            current_version_id=self.current_version_id,
            versions=tuple(versions),
            version_log=tuple(history),
            schemas=tuple(self.schemas[k] for k in sorted(self.schemas)),
            properties=self.properties,
            format_version=VIEW_FORMAT_VERSION,
        )


def _flag(properties: Mapping[str, str], key: str) -> bool:
    value = properties.get(key, "false").strip().lower()
    if value not in ("true", "false"):
        raise InvalidUpdate(f"view property {key} must be true or false: {value!r}")
    return value == "true"


def _history_size(properties: Mapping[str, str]) -> int:
    raw = properties.get(VERSION_HISTORY_SIZE)
    if raw is None:
        return VERSION_HISTORY_SIZE_DEFAULT
    try:
        size = int(raw)
    except ValueError:
        size = 0
    if size < 1:
        raise InvalidUpdate(
            f"view property {VERSION_HISTORY_SIZE} must be a positive integer: {raw!r}"
        )
    return size
