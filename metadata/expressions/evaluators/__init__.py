"""Evaluating bound row filters: on Arrow data, on file metrics, on partitions and manifests.

Every evaluator follows the semantics documented in :mod:`lakecat.metadata.expressions.expressions`
(a row matches when the filter is TRUE; predicates on nulls are not TRUE except ``IS NULL``;
NaN compares as IEEE 754). Pruning evaluators come in two kinds:

* *inclusive* ("rows might match"): False only when no row can match, so a scan may skip.
  :class:`InclusiveMetricsEvaluator`, :class:`PartitionEvaluator`, :class:`ManifestEvaluator`.
* *strict* ("all rows must match"): True only when every row matches, so a delete may drop a
  whole file without rewriting it. :class:`StrictMetricsEvaluator`, ``strict=True`` partitions.

The metrics rules follow Iceberg Java's ``InclusiveMetricsEvaluator``,
``StrictMetricsEvaluator`` and ``ManifestEvaluator``; the strict rules are tightened where Java
counts nulls as matching ``!=``, ``NOT IN`` and ``IS NOT NAN`` (lakecat never does) and where
Java trusts a missing null or NaN count. Partition projection follows Java's ``Projections``
and each transform's ``project``/``projectStrict`` (as pyiceberg 0.12 implements them, without
Java's adjustment for pre-1970 partition values written by Iceberg 0.10 and older).

Each evaluator compiles its expression once into nested closures; evaluating a file or a
manifest then decodes only the bounds that the filter reads, each at most once.

One module per kind: :mod:`.rows` (values and Arrow), :mod:`.metrics` (file metrics),
:mod:`.projection` (filters projected onto partitions), :mod:`.partitions` (partition values
and manifest summaries); :mod:`.base` holds what they share.
"""

from lakecat.metadata.expressions.evaluators.base import IN_PREDICATE_LIMIT, ensure_bound
from lakecat.metadata.expressions.evaluators.metrics import (
    InclusiveMetricsEvaluator,
    StrictMetricsEvaluator,
)
from lakecat.metadata.expressions.evaluators.partitions import (
    ManifestEvaluator,
    PartitionEvaluator,
    PartitionSummaries,
    strict_partition_eval,
)
from lakecat.metadata.expressions.evaluators.projection import (
    inclusive_projection,
    partition_schema,
    selects_whole_partitions,
    strict_projection,
)
from lakecat.metadata.expressions.evaluators.rows import (
    row_evaluator,
    to_arrow_filter,
    value_predicate,
)

__all__ = [
    "IN_PREDICATE_LIMIT",
    "InclusiveMetricsEvaluator",
    "ManifestEvaluator",
    "PartitionEvaluator",
    "PartitionSummaries",
    "StrictMetricsEvaluator",
    "ensure_bound",
    "inclusive_projection",
    "partition_schema",
    "row_evaluator",
    "selects_whole_partitions",
    "strict_partition_eval",
    "strict_projection",
    "to_arrow_filter",
    "value_predicate",
]
