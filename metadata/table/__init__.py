"""Table metadata: the frozen :class:`TableMetadata` and its parts (snapshots, refs, sort
orders), the update and requirement records of a commit (:mod:`.updates`), the pure
``apply(base, updates)`` (:mod:`.apply`), schema and partition-spec evolution
(:mod:`.schema_evolution`, :mod:`.spec_evolution`), ``metadata.json`` reading and writing
(:mod:`.metadata_json`, :mod:`.metadata_files`), new tables (:mod:`.new_table`), replacing a
table's definition (:mod:`.replace`) and time travel as resolution over metadata
(:mod:`.timetravel`).
"""

from lakecat.metadata.table.apply import (
    apply,
)
from lakecat.metadata.table.metadata_files import (
    read_metadata,
    write_metadata,
)
from lakecat.metadata.table.replace import Replacement, plan_replacement, replaced
from lakecat.metadata.table.schema_evolution import SchemaUpdate
from lakecat.metadata.table.snapshots import (
    APPEND,
    DELETE,
    MAIN_BRANCH,
    OVERWRITE,
    REPLACE,
    Snapshot,
    SnapshotRef,
    user_summary,
)
from lakecat.metadata.table.sorting import (
    SortField,
    SortOrder,
)
from lakecat.metadata.table.table_metadata import (
    TableMetadata,
)
from lakecat.metadata.table.timetravel import (
    ancestors_between,
    is_ancestor_of,
    schema_for,
    snapshot_at,
)

__all__ = [
    "APPEND",
    "DELETE",
    "MAIN_BRANCH",
    "OVERWRITE",
    "REPLACE",
    "Replacement",
    "SchemaUpdate",
    "Snapshot",
    "SnapshotRef",
    "SortField",
    "SortOrder",
    "TableMetadata",
    "ancestors_between",
    "apply",
    "is_ancestor_of",
    "plan_replacement",
    "read_metadata",
    "replaced",
    "schema_for",
    "snapshot_at",
    "user_summary",
    "write_metadata",
]
