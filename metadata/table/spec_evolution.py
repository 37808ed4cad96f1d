"""Partition spec evolution as a pure builder, plus the partition/sort compatibility checks.

:class:`SpecUpdate` records added, removed and renamed partition fields against a table's
metadata; :meth:`SpecUpdate.apply` previews the new spec and :meth:`SpecUpdate.updates`
gives ``[AddPartitionSpec, SetDefaultSpec(-1)]``. Format v2 semantics, as Iceberg Java's
``BaseUpdatePartitionSpec``: removed fields are dropped from the new spec; an added field
that some earlier spec already had (same source column and transform) gets that field's id
back, so partition values stay comparable across specs; any other new field gets the next id
after ``last-partition-id``.
"""

from __future__ import annotations

from dataclasses import replace

from lakecat.metadata.errors import InvalidUpdate, ValidationError
from lakecat.metadata.partitioning.spec import PartitionField, PartitionSpec
from lakecat.metadata.partitioning.transforms import (
    Transform,
    default_partition_field_name,
    parse_transform,
)
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import StructType
from lakecat.metadata.table.sorting import SortOrder
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.updates import LAST_ADDED, AddPartitionSpec, SetDefaultSpec, TableUpdate

_TIME_TRANSFORMS = frozenset({"year", "month", "day", "hour"})


# ---- checks shared with apply and new_table ------------------------------------------------
def parse_user_transform(text: str) -> Transform:
    """Parse a transform given by a user; an unknown or invalid one is an InvalidUpdate."""
    try:
        return parse_transform(text)
    except ValidationError as exc:
        raise InvalidUpdate(str(exc)) from exc


def check_spec_compatible(spec: PartitionSpec, schema: Schema) -> None:
    """Java's ``PartitionSpec.checkCompatibility`` plus unique field ids and names.

    Every non-void field's source column must exist in ``schema`` as a primitive nested only
    in structs, and its transform must accept the column's type.
    """
    _check_unique_fields(spec)
    for f in spec.fields:
        transform = _stored_transform(f.transform)
        if transform.is_void:
            continue  # v1 tables keep dropped fields as void; their source may be gone
        where = f"partition field {f.name!r}"
        _check_source(schema, f.source_id, transform, where)


def check_sort_order_compatible(order: SortOrder, schema: Schema) -> None:
    """Java's ``SortOrder.checkCompatibility``: sources exist, transforms accept them."""
    for f in order.fields:
        if f.direction not in ("asc", "desc"):
            raise InvalidUpdate(f"sort direction must be 'asc' or 'desc', not {f.direction!r}")
        if f.null_order not in ("nulls-first", "nulls-last"):
            raise InvalidUpdate(
                f"null order must be 'nulls-first' or 'nulls-last', not {f.null_order!r}"
            )
        _check_source(schema, f.source_id, _stored_transform(f.transform), "a sort field")


def check_partition_names(spec: PartitionSpec, schema: Schema) -> None:
    """The checks of Java's ``PartitionSpec.Builder`` for a spec being created.

    No two fields may partition the same column redundantly (the same transform, or two time
    transforms), and a partition name may equal a column name only for an identity partition
    of that very column.
    """
    _check_unique_fields(spec)
    seen: dict[tuple[int, str], PartitionField] = {}
    for f in spec.fields:
        transform = str(_stored_transform(f.transform))
        key = (f.source_id, "time" if transform in _TIME_TRANSFORMS else transform)
        if key in seen:
            raise InvalidUpdate(
                f"redundant partition field {f.name!r} ({transform}): it partitions the same "
                f"column as {seen[key].name!r} ({seen[key].transform})"
            )
        seen[key] = f
        if schema.has_field(f.name):
            same_column = schema.find_field(f.name).field_id == f.source_id
            if transform != "identity" or not same_column:
                raise InvalidUpdate(
                    f"partition field name {f.name!r} is also a column name; only an identity "
                    "partition of that column may use it"
                )


def _stored_transform(text: str) -> Transform:
    # Metadata written by a newer engine may carry a transform lakecat does not know.
    try:
        return parse_transform(text, strict=False)
    except ValidationError as exc:
        raise InvalidUpdate(str(exc)) from exc


def _check_unique_fields(spec: PartitionSpec) -> None:
    ids = [f.field_id for f in spec.fields]
    if len(set(ids)) != len(ids):
        raise InvalidUpdate(f"duplicate partition field ids in spec {spec.spec_id}: {ids}")
    names = [f.name for f in spec.fields]
    if any(not n for n in names):
        raise InvalidUpdate("a partition field needs a non-empty name")
    if len(set(names)) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise InvalidUpdate(f"duplicate partition field names: {', '.join(dupes)}")


def _check_source(schema: Schema, source_id: int, transform: Transform, where: str) -> None:
    if not schema.has_field(source_id):
        raise InvalidUpdate(f"{where} refers to column id {source_id}, which is not in the schema")
    source = schema.find_field(source_id).field_type
    name = schema.column_name(source_id)
    if not source.is_primitive:
        raise InvalidUpdate(f"{where} uses {name!r}, a {source}; only primitive columns qualify")
    if not transform.can_transform(source):
        raise InvalidUpdate(
            f"{where}: transform {transform} cannot be applied to {name!r} ({source})"
        )
    parent = schema.parent_id(source_id)
    while parent is not None:
        parent_type = schema.find_field(parent).field_type
        if not isinstance(parent_type, StructType):
            raise InvalidUpdate(f"{where} uses {name!r}, which is nested in a {parent_type}")
        parent = schema.parent_id(parent)


# ---- the builder ---------------------------------------------------------------------------
class SpecUpdate:
    """Evolve the default partition spec of ``metadata``; setters return ``self``."""

    def __init__(self, metadata: TableMetadata, *, case_sensitive: bool = True) -> None:
        self._metadata = metadata
        self._schema = metadata.schema()
        self._spec = metadata.spec()
        self._case_sensitive = case_sensitive
        self._last_partition_id = metadata.last_partition_id
        self._adds: list[PartitionField] = []
        self._deletes: set[int] = set()
        self._renames: dict[str, str] = {}

    def add_field(
        self, source_column: str, transform: str = "identity", name: str | None = None
    ) -> SpecUpdate:
        """Partition by ``transform(source_column)``; ``name`` defaults to Java's choice."""
        source = self._schema.find_field(source_column, case_sensitive=self._case_sensitive)
        parsed = parse_user_transform(transform)
        source_name = self._schema.column_name(source.field_id)
        if not source.field_type.is_primitive or not parsed.can_transform(source.field_type):
            raise InvalidUpdate(
                f"cannot partition by {parsed}({source_name}): {parsed} does not apply to "
                f"{source.field_type}"
            )
        key = (source.field_id, str(parsed))
        existing = next((f for f in self._spec.fields if self._key(f) == key), None)
        if existing is not None and existing.field_id in self._deletes:
            # Removed and added back in one change: keep the field (Java does the same).
            self._deletes.discard(existing.field_id)
            if name is not None and name != existing.name:
                self.rename_field(existing.name, name)
            return self
        if existing is not None:
            raise InvalidUpdate(
                f"cannot add {parsed}({source_name}): partition field {existing.name!r} "
                "already partitions by it"
            )
        if any(self._key(a) == key for a in self._adds):
            raise InvalidUpdate(f"cannot add {parsed}({source_name}) twice")
        new_field = self._recycle_or_create(source.field_id, parsed, name, source_name)
        clash = next((f for f in self._spec.fields if f.name == new_field.name), None)
        if clash is not None and clash.field_id not in self._deletes:
            raise InvalidUpdate(
                f"cannot add partition field {new_field.name!r}: the spec already has a field "
                "with that name"
            )
        if any(a.name == new_field.name for a in self._adds):
            raise InvalidUpdate(f"cannot add partition field {new_field.name!r} twice")
        self._adds.append(new_field)
        return self

    def remove_field(self, name: str) -> SpecUpdate:
        """Stop partitioning by the field called ``name`` (v2: it is dropped from the spec)."""
        if any(a.name == name for a in self._adds):
            raise InvalidUpdate(
                f"cannot remove partition field {name!r}: it is added by this change"
            )
        if name in self._renames:
            raise InvalidUpdate(f"cannot remove partition field {name!r}: it is being renamed")
        self._deletes.add(self._current_field(name).field_id)
        return self

    def rename_field(self, name: str, new_name: str) -> SpecUpdate:
        """Rename a partition field of the current spec."""
        if any(a.name == name for a in self._adds):
            raise InvalidUpdate(
                f"cannot rename partition field {name!r}: it is added by this change; pass the "
                "name to add_field"
            )
        if not new_name:
            raise InvalidUpdate(f"cannot rename partition field {name!r} to an empty name")
        field = self._current_field(name)
        if field.field_id in self._deletes:
            raise InvalidUpdate(f"cannot rename partition field {name!r}: it is being removed")
        self._renames[name] = new_name
        return self

    def apply(self) -> PartitionSpec:
        """The evolved spec (a preview; nothing is committed)."""
        fields = [
            replace(f, name=self._renames.get(f.name, f.name))
            for f in self._spec.fields
            if f.field_id not in self._deletes
        ]
        fields.extend(self._adds)
        spec = PartitionSpec(self._spec.spec_id, tuple(fields))
        check_spec_compatible(spec, self._schema)
        check_partition_names(spec, self._schema)
        return replace(spec, spec_id=self._spec_id_for(spec))

    def updates(self) -> list[TableUpdate]:
        """``[AddPartitionSpec, SetDefaultSpec(-1)]``, or ``[]`` when nothing changes."""
        spec = self.apply()
        if spec.fields == self._spec.fields:
            return []
        return [AddPartitionSpec(spec), SetDefaultSpec(LAST_ADDED)]

    # ---- internals ----------------------------------------------------------------------
    @staticmethod
    def _key(f: PartitionField) -> tuple[int, str]:
        return f.source_id, str(parse_transform(f.transform, strict=False))

    def _current_field(self, name: str) -> PartitionField:
        for f in self._spec.fields:
            if f.name == name:
                return f
        known = ", ".join(f.name for f in self._spec.fields) or "none"
        raise InvalidUpdate(f"no partition field named {name!r} (fields: {known})")

    def _recycle_or_create(
        self, source_id: int, transform: Transform, name: str | None, source_name: str
    ) -> PartitionField:
        # v2: a field that an earlier spec had keeps its id (Java's recycleOrCreatePartitionField).
        for spec in self._metadata.partition_specs:
            for f in spec.fields:
                if self._key(f) == (source_id, str(transform)) and name in (None, f.name):
                    return f
        self._last_partition_id += 1
        return PartitionField(
            source_id,
            self._last_partition_id,
            str(transform),
            name or default_partition_field_name(source_name, transform, evolving=True),
        )

    def _spec_id_for(self, spec: PartitionSpec) -> int:
        for existing in self._metadata.partition_specs:
            if existing.compatible_with(spec):
                reused: int = existing.spec_id
                return reused
        return max(int(s.spec_id) for s in self._metadata.partition_specs) + 1
