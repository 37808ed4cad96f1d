"""Partitioning: partition specs (:mod:`.spec`) and the transforms of the spec with their
projections of filters (:mod:`.transforms`), and the partition type over all of a table's
specs (:mod:`.union`). (Evolving a table's spec is a table change:
:mod:`lakecat.metadata.table.spec_evolution`.)
"""

from lakecat.metadata.partitioning.spec import (
    UNPARTITIONED,
    PartitionField,
    PartitionSpec,
)
from lakecat.metadata.partitioning.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    YearTransform,
    parse_transform,
)
from lakecat.metadata.partitioning.union import source_type, union_fields, union_type

__all__ = [
    "UNPARTITIONED",
    "BucketTransform",
    "DayTransform",
    "HourTransform",
    "IdentityTransform",
    "MonthTransform",
    "PartitionField",
    "PartitionSpec",
    "Transform",
    "TruncateTransform",
    "YearTransform",
    "parse_transform",
    "source_type",
    "union_fields",
    "union_type",
]
