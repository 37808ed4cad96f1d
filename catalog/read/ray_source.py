"""A scan as a Ray Dataset (:meth:`Scan.to_ray <lakecat.catalog.read.scan.Scan.to_ray>`).

Ray is an optional dependency (``pip install 'lakecat[ray]'``): this module imports it, and
only ``Scan.to_ray`` imports this module, when called.

The driver plans the scan once, as every other read does (the snapshot or time travel, the
filter, the data files with the delete files that apply to each, the projection, row
lineage), and :class:`ScanDatasource` hands Ray that plan cut into read tasks:

* the plan's data files, in planning order, are cut into at most ``parallelism`` contiguous
  groups of about equal estimated size (``parallelism`` is what Ray asks for: the caller's
  ``override_num_blocks``, else Ray's own choice from the size estimate and the cluster);
  a group never splits a file, so a scan of few files has fewer tasks;
* each read task carries only its group: the data files, their delete files and data
  sequence numbers. What every task shares (the scan: its FileIO configuration, the table
  metadata, schema, filter and projection; never the catalog, its SQL engine or its
  manifest cache) is put in Ray's object store once each time Ray asks for the tasks;
* in a Ray worker, a task reads its group through the scan's own engine
  (:meth:`Scan.to_batches <lakecat.catalog.read.scan.Scan.to_batches>`: runs of small files,
  deletes applied, row lineage filled in, the residual filter, bounded read-ahead) and yields
  each batch as a block, so a task holds at most its read-ahead cap
  (``max_read_ahead_bytes``) and a block whatever the size of its group.

The rows are exactly ``scan.to_arrow()``'s; a Dataset that preserves order
(``DataContext.execution_options.preserve_order``) has them in the same order. Each task's
metadata estimates its in-memory size from the files' column sizes (the projected columns'
compressed bytes, times :data:`~lakecat.metadata.io.parquet.ARROW_TO_PARQUET_RATIO`) and
states its row count only when it is exact (no filter, no delete file), since
``Dataset.count()`` may answer from it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import ray
from ray.data import Datasource, ReadTask
from ray.data.block import BlockMetadata

from lakecat.catalog.read.planning import ScanPlan
from lakecat.metadata.expressions.expressions import AlwaysTrue
from lakecat.metadata.io.parquet import ARROW_TO_PARQUET_RATIO
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.schema.arrow import schema_to_arrow

if TYPE_CHECKING:
    from lakecat.catalog.read.scan import Scan

__all__ = ["READ_AHEAD_BYTES", "ScanDatasource", "file_groups", "scan_dataset"]

# A read task's read-ahead cap when the caller names none: less than a scan's own default
# (256 MiB), as a node runs a task per CPU
READ_AHEAD_BYTES = 64 << 20


def scan_dataset(
    scan: Scan,
    *,
    override_num_blocks: int | None,
    batch_size: int,
    max_read_ahead_bytes: int,
    **read_options: Any,
) -> Any:
    """The rows of ``scan`` as a ``ray.data.Dataset``: the scan planned now, on the driver,
    and read by Ray's tasks when the Dataset runs (see the module docstring).
    ``read_options`` go to ``ray.data.read_datasource`` (``concurrency``, ``num_cpus``,
    ``memory``, ...)."""
    source = ScanDatasource(
        scan, scan.plan(), batch_size=batch_size, max_read_ahead_bytes=max_read_ahead_bytes
    )
    return ray.data.read_datasource(source, override_num_blocks=override_num_blocks, **read_options)


@dataclass(frozen=True)
class _SharedRead:
    """What every read task of one Dataset reads with: put in Ray's object store once."""

    scan: Scan  # pickled without its manifest cache (Scan.__getstate__)
    batch_size: int
    max_read_ahead_bytes: int


class ScanDatasource(Datasource):  # type: ignore[misc]
    """A ``ray.data.Datasource`` over ``scan`` and its ``plan`` (see the module docstring):
    read tasks that read at most ``batch_size`` rows a batch, with at most
    ``max_read_ahead_bytes`` read ahead."""

    def __init__(
        self, scan: Scan, plan: ScanPlan, *, batch_size: int, max_read_ahead_bytes: int
    ) -> None:
        super().__init__()
        self._plan = plan
        # what the tasks share: the scan (each task carries its own share of the plan)
        self._scan = scan
        self._batch_size = batch_size
        self._max_read_ahead_bytes = max_read_ahead_bytes
        self._schema = schema_to_arrow(scan.projected)
        # field ids whose stored bytes the rows read take (estimates)
        self._projected_ids = frozenset(scan.projected.field_ids())

    def get_name(self) -> str:
        return "LakecatScan"

    def estimate_inmemory_data_size(self) -> int:
        return sum(self._estimate(f) for f in self._plan.files)

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: int | None = None,
        data_context: Any = None,
    ) -> list[ReadTask]:
        plan = self._plan
        shared = ray.put(_SharedRead(self._scan, self._batch_size, self._max_read_ahead_bytes))
        if not plan.files:  # one task, no rows: the Dataset still has the scan's schema
            return [self._read_task(shared, plan, (), per_task_row_limit)]
        groups = file_groups(plan.files, [self._estimate(f) for f in plan.files], parallelism)
        return [self._read_task(shared, plan, g, per_task_row_limit) for g in groups]

    def _read_task(
        self,
        shared: Any,
        plan: ScanPlan,
        files: Sequence[DataFile],
        per_task_row_limit: int | None,
    ) -> ReadTask:
        paths = {f.file_path for f in files}
        group = ScanPlan(
            tuple(files),
            manifests_total=0,
            manifests_scanned=0,
            files_total=len(files),
            deletes={p: d for p, d in plan.deletes.items() if p in paths},
            sequence_numbers={p: n for p, n in plan.sequence_numbers.items() if p in paths},
        )
        # the files' counts are the rows read only when no filter or delete file drops any
        exact = isinstance(self._scan.expression, AlwaysTrue) and not group.deletes
        metadata = BlockMetadata(
            num_rows=group.record_count if exact else None,
            size_bytes=sum(self._estimate(f) for f in files),
            input_files=tuple(f.file_path for f in files),
            exec_stats=None,
        )
        return ReadTask(
            lambda: _read_group(shared, group),
            metadata,
            schema=self._schema,
            per_task_row_limit=per_task_row_limit,
        )

    def _estimate(self, f: DataFile) -> int:
        """The bytes the file's rows take in Arrow, projected: from its column sizes when it
        has them, else from its size."""
        sizes = f.column_sizes
        stored = (
            sum(n for fid, n in sizes.items() if fid in self._projected_ids)
            if sizes
            else f.file_size_in_bytes
        )
        return int(stored * ARROW_TO_PARQUET_RATIO)


def file_groups(
    files: Sequence[DataFile], sizes: Sequence[int], parallelism: int
) -> list[list[DataFile]]:
    """``files`` cut, in their order, into at most ``parallelism`` contiguous non-empty
    groups of about equal total ``sizes``: a file goes to the group its middle falls in."""
    count = max(1, min(parallelism, len(files)))
    weights = [max(1, s) for s in sizes]  # a file of no estimate still costs its opening
    total = sum(weights)
    groups: list[list[DataFile]] = []
    last = -1
    before = 0
    for f, w in zip(files, weights, strict=True):
        index = min(count - 1, (2 * before + w) * count // (2 * total))
        if index != last:
            groups.append([])
            last = index
        groups[-1].append(f)
        before += w
    return groups


def _read_group(shared: Any, group: ScanPlan) -> Iterator[pa.Table]:
    """A read task's blocks (runs in a Ray worker): its group's batches, one block each."""
    read: _SharedRead = ray.get(shared)
    for batch in read.scan.to_batches(
        batch_size=read.batch_size, max_read_ahead_bytes=read.max_read_ahead_bytes, plan=group
    ):
        yield pa.Table.from_batches([batch])
