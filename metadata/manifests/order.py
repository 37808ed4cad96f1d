"""The order lakecat writes manifest entries in: by partition tuple.

An Avro manifest is a series of compressed blocks of records. When its entries are ordered by
partition, and blocks start where the first partition field changes, each block holds a narrow
range of partition values. The writer records that range per block in the Avro header
(``BLOCKS_KEY``), as a partition summary of the first field, so a scan with a filter on it
decodes only the blocks that can hold matching entries (:mod:`lakecat.metadata.manifests.blocks`).
The order has no meaning in the Iceberg spec; other readers (pyiceberg, Java) ignore the extra
header keys.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from lakecat.metadata.manifests.datafile import ManifestEntry, PartitionFieldSummary

ORDER_KEY = "lakecat.entry-order"
"""Avro header key of manifests whose entries are ordered by ``partition_order_key``."""
PARTITION_ORDER = "partition"
BLOCKS_KEY = "lakecat.block-summaries"
"""Avro header key of those manifests: per Avro block, its entry count and the partition
summary (null/NaN flags, bounds) of the first partition field over its entries."""

# Small blocks let a filtered scan decode few entries of other partitions; a block per entry
# would compress badly in tables of small partitions.
MIN_BLOCK_ENTRIES = 16
MAX_BLOCK_ENTRIES = 512

# Values sort before NaN, NaN before null.
VALUE, NAN, NULL = 0, 1, 2


def rank(value: Any) -> int:
    if value is None:
        return NULL
    if isinstance(value, float) and math.isnan(value):
        return NAN
    return VALUE


def partition_order_key(partition: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    return tuple((r, value if r == VALUE else 0) for r, value in ((rank(v), v) for v in partition))


def ordered_by_partition(entries: Sequence[ManifestEntry]) -> list[ManifestEntry] | None:
    """``entries`` ordered by partition (stable), or None when their values do not compare
    (which a spec's partition fields never produce, but a mistyped caller could)."""
    try:
        return sorted(entries, key=lambda e: partition_order_key(e.data_file.partition))
    except TypeError:
        return None


def block_starts(ordered: Sequence[ManifestEntry]) -> list[int]:
    """Indexes of the entries that start an Avro block: a new first partition value once the
    block holds ``MIN_BLOCK_ENTRIES``, and every ``MAX_BLOCK_ENTRIES`` entries."""
    starts = [0] if ordered else []
    previous = None
    for i, entry in enumerate(ordered):
        key = partition_order_key(entry.data_file.partition[:1])
        held = i - starts[-1]
        if held >= MAX_BLOCK_ENTRIES or (held >= MIN_BLOCK_ENTRIES and key != previous):
            starts.append(i)
        previous = key
    return starts


def encode_block_summaries(counts: Sequence[int], summaries: Sequence[Any]) -> str:
    """The ``BLOCKS_KEY`` header value: per block, its entry count and the summary of its
    first partition field (a
    :class:`~lakecat.metadata.manifests.datafile.PartitionFieldSummary`)."""
    return json.dumps(
        [
            [n, s.contains_null, s.contains_nan, _hex(s.lower_bound), _hex(s.upper_bound)]
            for n, s in zip(counts, summaries, strict=True)
        ],
        separators=(",", ":"),
    )


def decode_block_summaries(text: str) -> list[tuple[int, PartitionFieldSummary]]:
    """Inverse of :func:`encode_block_summaries`; ValueError/TypeError/KeyError if malformed."""
    return [
        (int(n), PartitionFieldSummary(bool(null), bool(nan), _unhex(lo), _unhex(hi)))
        for n, null, nan, lo, hi in json.loads(text)
    ]


def _hex(value: bytes | None) -> str | None:
    return None if value is None else value.hex()


def _unhex(value: str | None) -> bytes | None:
    return None if value is None else bytes.fromhex(value)
