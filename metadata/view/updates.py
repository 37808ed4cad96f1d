"""Changes to a view as data: the update records and the one requirement of a view commit.

The records and their JSON are the Iceberg REST catalog's view updates (``{"action":
"add-view-version", ...}``). ``-1`` as the schema id of :class:`AddViewVersion` and as the
version id of :class:`SetCurrentViewVersion` means "the one added last in this change set",
as in Iceberg's ``MetadataUpdate``. :func:`lakecat.metadata.view.apply.apply_view` applies
them; a retried commit re-applies the same records to the newer base.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from lakecat.metadata.errors import RequirementFailed
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.view.view_metadata import ViewMetadata, ViewVersion

LAST_ADDED = -1


@dataclass(frozen=True, slots=True)
class AssignViewUUID:
    uuid: str
    action: ClassVar[str] = "assign-uuid"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "uuid": self.uuid}


@dataclass(frozen=True, slots=True)
class SetViewLocation:
    location: str
    action: ClassVar[str] = "set-location"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "location": self.location}


@dataclass(frozen=True, slots=True)
class SetViewProperties:
    updates: Mapping[str, str]
    action: ClassVar[str] = "set-properties"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "updates": dict(self.updates)}


@dataclass(frozen=True, slots=True)
class RemoveViewProperties:
    removals: tuple[str, ...]
    action: ClassVar[str] = "remove-properties"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "removals": list(self.removals)}


@dataclass(frozen=True, slots=True)
class AddViewSchema:
    """Add a schema, or reuse a known one of the same structure."""

    schema: Schema
    action: ClassVar[str] = "add-schema"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "schema": self.schema.to_json()}


@dataclass(frozen=True, slots=True)
class AddViewVersion:
    """Add a version (its schema id may be ``-1``); a known version of the same definition
    is reused instead, and a version id already taken is raised above every known one."""

    version: ViewVersion
    action: ClassVar[str] = "add-view-version"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "view-version": self.version.to_json()}


@dataclass(frozen=True, slots=True)
class SetCurrentViewVersion:
    version_id: int
    action: ClassVar[str] = "set-current-view-version"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "view-version-id": self.version_id}


ViewUpdate = (
    AssignViewUUID
    | SetViewLocation
    | SetViewProperties
    | RemoveViewProperties
    | AddViewSchema
    | AddViewVersion
    | SetCurrentViewVersion
)


@dataclass(frozen=True, slots=True)
class AssertViewUUID:
    """The view must still be the one the change was made for (not dropped and re-created
    under the same name)."""

    uuid: str
    type: ClassVar[str] = "assert-view-uuid"

    def validate(self, base: ViewMetadata | None) -> None:
        if base is None:
            raise RequirementFailed(
                f"requirement failed: view uuid {self.uuid} expected, but the view does not exist"
            )
        if base.view_uuid.lower() != self.uuid.lower():
            raise RequirementFailed(
                f"requirement failed: view uuid {self.uuid} expected, found {base.view_uuid}"
            )

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "uuid": self.uuid}
