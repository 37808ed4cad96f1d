"""Views in the catalog: the :class:`View` handle and the commit of a view change.

A view's state is its metadata file (:mod:`lakecat.metadata.view`); the catalog row of type
``VIEW`` points at the current one, and a change swaps the pointer as a table commit does
(:meth:`SqlCatalogStore.swap_view_location`). A change is a list of update records with the
requirement that the view is still the same view (its uuid). When the swap is lost, the records
are applied again to the view's newest metadata and the swap is tried again, within the
view's ``commit.retry.*`` budget: two replacements both land, in the order of their swaps, and
both versions stay in the view's history. A view dropped, or dropped and created again,
meanwhile fails the change (:class:`NoSuchView`, :class:`RequirementFailed`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from lakecat.catalog.about import lakecat_version
from lakecat.catalog.commit.pipeline import delete_quietly
from lakecat.catalog.identifiers import namespace_to_string
from lakecat.catalog.interrupts import DeferredInterrupts
from lakecat.catalog.retry import RetryClock, RetryPolicy
from lakecat.catalog.store.store import SqlCatalogStore
from lakecat.metadata.errors import (
    CommitFailed,
    CommitStateUnknown,
    LakecatError,
    NoSuchView,
    ValidationError,
)
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.schema.arrow import arrow_to_schema
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.view import (
    AssertViewUUID,
    RemoveViewProperties,
    SetCurrentViewVersion,
    SetViewProperties,
    SqlRepresentation,
    ViewHistoryEntry,
    ViewMetadata,
    ViewUpdate,
    ViewVersion,
    apply_view,
    new_version_updates,
    new_view_metadata_location,
    read_view_metadata,
    write_view_metadata,
)

__all__ = [
    "View",
    "ViewOps",
    "commit_new_view",
    "engine_summary",
    "now_ms",
    "representations_of",
]

Namespace = tuple[str, ...]
_Changes = Callable[[ViewMetadata], list[ViewUpdate]]
"""The updates of a change, made for the base they are applied to."""


def engine_summary() -> dict[str, str]:
    """The summary of a version lakecat's Python API writes (Spark's names its engine)."""
    return {"engine-name": "lakecat", "engine-version": lakecat_version()}


def now_ms() -> int:
    """The wall clock in milliseconds, the unit of a view version's and log entry's time."""
    return int(time.time() * 1000)


@dataclass(frozen=True)
class ViewOps:
    """One view's row and files: load the current metadata, swap the pointer."""

    store: SqlCatalogStore
    namespace: Namespace
    view: str
    io: FileIO

    @property
    def name(self) -> str:
        return f"{namespace_to_string(self.namespace)}.{self.view}"

    def refresh(self) -> tuple[ViewMetadata, str]:
        location = self.store.get_view_location(self.namespace, self.view)
        return read_view_metadata(self.io, location), location

    def swap(self, *, expected: str, new: str) -> None:
        self.store.swap_view_location(self.namespace, self.view, expected=expected, new=new)


def commit_new_view(
    store: SqlCatalogStore, namespace: Namespace, name: str, io: FileIO, metadata: ViewMetadata
) -> str:
    """Write a new view's first metadata file and insert its row; its location.

    ViewAlreadyExists when a view or table has the name (the file is deleted), and the
    store's errors; CommitStateUnknown keeps the file (the row may point at it)."""
    location = new_view_metadata_location(metadata.location, None, metadata.properties)
    write_view_metadata(io, location, metadata)
    interrupts = DeferredInterrupts()  # the row's INSERT is the view's point of no return
    interrupts.start()
    try:
        store.create_view_row(namespace, name, location)
    except CommitStateUnknown:
        raise
    except LakecatError:
        delete_quietly(io, [location])  # the store's contract: definitely not created
        raise
    finally:
        interrupts.stop(
            f"lakecat: creating view {namespace_to_string(namespace)}.{name} was interrupted"
        )
    return location


class View:
    """A view of the catalog: the metadata it was loaded (or last changed) with, and its
    changes. ``view.sql()`` is the current query in Spark's dialect, ``view.schema()`` the
    columns it produces; :meth:`replace` gives it a new definition, :meth:`set_current_version`
    rolls it back to a known one, :meth:`update_properties` changes its properties."""

    def __init__(self, ops: ViewOps, metadata: ViewMetadata, metadata_location: str) -> None:
        self._ops = ops
        self.metadata = metadata
        self.metadata_location = metadata_location

    # ---- what it is ---------------------------------------------------------------------
    @property
    def name(self) -> str:
        """``namespace.name``."""
        return self._ops.name

    @property
    def identifier(self) -> tuple[str, ...]:
        return (*self._ops.namespace, self._ops.view)

    @property
    def uuid(self) -> str:
        return self.metadata.view_uuid

    @property
    def location(self) -> str:
        return self.metadata.location

    @property
    def properties(self) -> Mapping[str, str]:
        return self.metadata.properties

    @property
    def current_version(self) -> ViewVersion:
        return self.metadata.current_version

    @property
    def versions(self) -> tuple[ViewVersion, ...]:
        return self.metadata.versions

    @property
    def history(self) -> tuple[ViewHistoryEntry, ...]:
        return self.metadata.version_log

    def schema(self) -> Schema:
        return self.metadata.schema()

    def sql(self, dialect: str = "spark") -> str | None:
        """The current version's query in ``dialect`` (None: it has none in that dialect)."""
        found = self.current_version.sql_for(dialect)
        return None if found is None else found.sql

    def __repr__(self) -> str:
        return f"View({self.name!r}, version={self.metadata.current_version_id})"

    # ---- changes ------------------------------------------------------------------------
    def refresh(self) -> View:
        """Load the view's current metadata. NoSuchView if it was dropped, also when another
        view took its name since (the spec: a refresh must find the view's own uuid)."""
        metadata, location = self._ops.refresh()
        if metadata.view_uuid != self.metadata.view_uuid:
            raise NoSuchView(
                f"view {self.name} was dropped and another view took its name (uuid "
                f"{self.metadata.view_uuid}, now {metadata.view_uuid}); load it again"
            )
        self.metadata, self.metadata_location = metadata, location
        return self

    def replace(
        self,
        sql: str | Mapping[str, str],
        schema: Schema | pa.Schema,
        *,
        default_namespace: Sequence[str] | None = None,
        default_catalog: str | None = None,
        properties: Mapping[str, str] | None = None,
        remove_properties: Sequence[str] = (),
        summary: Mapping[str, str] | None = None,
    ) -> View:
        """A new definition: the query (``sql`` in Spark's dialect, or ``{dialect: sql}``),
        the schema it produces, and what unqualified names resolve against (the view's own
        namespace when not given). The view keeps its uuid, location and history; the
        properties given are set on top of its own, after ``remove_properties`` are removed."""
        representations = representations_of(sql)
        columns = arrow_to_schema(schema) if isinstance(schema, pa.Schema) else schema
        namespace = self._ops.namespace if default_namespace is None else default_namespace
        version_summary = engine_summary() if summary is None else summary
        return self._commit(
            lambda base: [
                *([RemoveViewProperties(tuple(remove_properties))] if remove_properties else []),
                *([SetViewProperties(dict(properties))] if properties else []),
                *new_version_updates(
                    base,
                    schema=columns,
                    representations=representations,
                    default_namespace=namespace,
                    default_catalog=default_catalog,
                    summary=version_summary,
                    now_ms=now_ms(),
                ),
            ]
        )

    def set_current_version(self, version_id: int) -> View:
        """Make a known version current again (a rollback); logged in the view's history."""
        return self._commit(lambda _base: [SetCurrentViewVersion(version_id)])

    def update_properties(
        self, updates: Mapping[str, str] | None = None, *, removals: Sequence[str] = ()
    ) -> View:
        return self._commit(
            lambda _base: [
                *([SetViewProperties(dict(updates))] if updates else []),
                *([RemoveViewProperties(tuple(removals))] if removals else []),
            ]
        )

    def _commit(self, changes: _Changes) -> View:
        requirement = AssertViewUUID(self.metadata.view_uuid)
        base, base_location = self.metadata, self.metadata_location
        clock = RetryClock(RetryPolicy.from_properties(base.properties), unbounded_retries=False)
        attempt = 1
        while True:
            new = apply_view(base, changes(base), now_ms=now_ms())
            if new == base:
                self.metadata, self.metadata_location = base, base_location
                return self
            location = new_view_metadata_location(new.location, base_location, new.properties)
            write_view_metadata(self._ops.io, location, new)
            try:
                self._ops.swap(expected=base_location, new=location)
            except CommitStateUnknown:
                raise  # the pointer may be this file's: keep it
            except CommitFailed as lost:
                delete_quietly(self._ops.io, [location])
                clock.lost(lost)
                if not clock.may_retry(attempt):
                    raise clock.give_up(self.name, attempt) from lost
                clock.wait(attempt)
                attempt += 1
                base, base_location = self._ops.refresh()
                requirement.validate(base)
                continue
            except LakecatError:
                delete_quietly(self._ops.io, [location])  # definitely not committed
                raise
            self.metadata, self.metadata_location = new, location
            return self


def representations_of(sql: str | Mapping[str, str]) -> tuple[SqlRepresentation, ...]:
    """``"SELECT ..."`` (Spark's dialect) or ``{"spark": "SELECT ...", "trino": ...}``."""
    queries = {"spark": sql} if isinstance(sql, str) else dict(sql)
    if not queries:
        raise ValidationError("a view needs a query")
    for dialect, text in queries.items():
        if not isinstance(dialect, str) or not dialect.strip():
            raise ValidationError(f"a view query's dialect must be a non-empty string: {dialect!r}")
        if not isinstance(text, str) or not text.strip():
            raise ValidationError(f"the view's {dialect} query is empty")
    return tuple(SqlRepresentation(sql=text, dialect=dialect) for dialect, text in queries.items())
