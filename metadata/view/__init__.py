"""Iceberg views: the frozen :class:`ViewMetadata` of the view spec (format version 1), the
update records of a view commit (:mod:`.updates`), the pure ``apply_view(base, updates)``
with Iceberg Java's rules for versions, schemas and history (:mod:`.apply`), and view
metadata files (:mod:`.view_files`)."""

from lakecat.metadata.view.apply import (
    COMMENT,
    REPLACE_DROP_DIALECT_ALLOWED,
    VERSION_HISTORY_SIZE,
    apply_view,
    define_view,
    new_version_updates,
)
from lakecat.metadata.view.updates import (
    AddViewSchema,
    AddViewVersion,
    AssertViewUUID,
    AssignViewUUID,
    RemoveViewProperties,
    SetCurrentViewVersion,
    SetViewLocation,
    SetViewProperties,
    ViewUpdate,
)
from lakecat.metadata.view.view_files import (
    new_view_metadata_location,
    parse_view_metadata,
    read_view_metadata,
    write_view_metadata,
)
from lakecat.metadata.view.view_metadata import (
    SqlRepresentation,
    ViewHistoryEntry,
    ViewMetadata,
    ViewVersion,
)

__all__ = [
    "COMMENT",
    "REPLACE_DROP_DIALECT_ALLOWED",
    "VERSION_HISTORY_SIZE",
    "AddViewSchema",
    "AddViewVersion",
    "AssertViewUUID",
    "AssignViewUUID",
    "RemoveViewProperties",
    "SetCurrentViewVersion",
    "SetViewLocation",
    "SetViewProperties",
    "SqlRepresentation",
    "ViewHistoryEntry",
    "ViewMetadata",
    "ViewUpdate",
    "ViewVersion",
    "apply_view",
    "define_view",
    "new_version_updates",
    "new_view_metadata_location",
    "parse_view_metadata",
    "read_view_metadata",
    "write_view_metadata",
]
