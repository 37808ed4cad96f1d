"""Row filters: the expression model, its parser (``"id > 5 AND region = 'eu'"``) and its
evaluators (partition values, column metrics, Arrow compute filters).

* :mod:`.expressions`: unbound and bound expressions, ``bind``, printing;
* :mod:`.parser`: text to expression;
* :mod:`.evaluators`: what can match a partition or a file's metrics, and the Arrow filter.
"""

from lakecat.metadata.expressions.evaluators import (
    InclusiveMetricsEvaluator,
    PartitionEvaluator,
    StrictMetricsEvaluator,
    selects_whole_partitions,
    to_arrow_filter,
)
from lakecat.metadata.expressions.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    Operation,
    Or,
    StartsWith,
    and_,
    bind,
    col,
    or_,
    quote_name,
    quote_path,
)
from lakecat.metadata.expressions.parser import (
    parse,
)

__all__ = [
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BoundPredicate",
    "EqualTo",
    "Expression",
    "GreaterThan",
    "GreaterThanOrEqual",
    "In",
    "InclusiveMetricsEvaluator",
    "IsNaN",
    "IsNull",
    "LessThan",
    "LessThanOrEqual",
    "Not",
    "NotEqualTo",
    "NotIn",
    "NotNaN",
    "NotNull",
    "Operation",
    "Or",
    "PartitionEvaluator",
    "StartsWith",
    "StrictMetricsEvaluator",
    "and_",
    "bind",
    "col",
    "or_",
    "parse",
    "quote_name",
    "quote_path",
    "selects_whole_partitions",
    "to_arrow_filter",
]
