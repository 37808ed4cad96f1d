"""The positions of a merge-on-read change's rows, gathered by Spark and sent as Arrow.

A merge-on-read ``lk.delete``, ``lk.update`` or ``lk.merge`` deletes the rows it changes by
position: it needs, for every data file with such rows, the positions of those rows. Spark
groups the ``(file, position)`` pairs by file and by block of 65,536 positions, collecting
each block's low 16 bits as an ``int`` list (so no group grows past 65,536 values), and the
driver receives the groups through ``DataFrame.toArrow``: the path once per block and four
bytes per position, with no Python object per row. The driver joins each file's blocks back
into a sorted, distinct int64 array. (The plugin's ``LakecatDeltaWrite`` does the same for
SQL statements with a Roaring bitmap per file and task.)
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column
from pyspark.sql import functions as F

from lakecat.metadata.deletes import positions_array

_BLOCK_BITS = 16
_FILE, _BLOCK, _LOW = "file", "block", "low"


def file_positions(rows: Any, file: Column, position: Column) -> dict[str, pa.Int64Array]:
    """The positions of ``rows`` (a DataFrame) in each data file, by path: ``file`` and
    ``position`` are the columns naming a row's data file and its position there. Each
    file's positions come back sorted and distinct; files without rows are left out."""
    low = position.bitwiseAND((1 << _BLOCK_BITS) - 1).cast("int")
    blocks = (
        rows.groupBy(file.alias(_FILE), F.shiftright(position, _BLOCK_BITS).alias(_BLOCK))
        .agg(F.collect_list(low).alias(_LOW))
        .toArrow()
        .sort_by(_FILE)
    )
    if blocks.num_rows == 0:
        return {}
    files = blocks.column(_FILE).to_pylist()
    lows = blocks.column(_LOW).combine_chunks()
    block = blocks.column(_BLOCK).combine_chunks().take(pc.list_parent_indices(lows))
    positions = pc.add(
        pc.shift_left(block, _BLOCK_BITS), pc.list_flatten(lows).cast(pa.int64())
    ).cast(pa.int64())
    offsets = pc.subtract(lows.offsets, lows.offsets[0]).to_pylist()  # into the flattened
    out: dict[str, pa.Int64Array] = {}
    first = 0
    for i in range(1, len(files) + 1):
        if i == len(files) or files[i] != files[first]:
            start, end = offsets[first], offsets[i]
            out[files[first]] = positions_array(positions.slice(start, end - start))
            first = i
    return out
