"""What a scan reads from a manifest decoded whole: its live entries, filtered in bulk before any
entry object is built.

A manifest that lakecat did not write in partition order (other engines' manifests, older
lakecat ones, and any manifest a scan cannot read block by block) is decoded whole: straight
to its entries by the compiled decoder
(:func:`~lakecat.metadata.manifests.manifest.decode_manifest_entries`), each entry's data file
then being what the filters are evaluated on; or, for a file that decoder leaves to fastavro, to
Avro records (:func:`~lakecat.metadata.manifests.manifest.decode_manifest_records`). Building a
:class:`~lakecat.metadata.manifests.datafile.ManifestEntry` from a record costs about as much
again as decoding it, and most are thrown away by a selective filter. So for records
:class:`ManifestEntries` keeps the records, evaluates the partition filter once per distinct
partition tuple, evaluates the metrics filter on each remaining record's counts and bounds
(:class:`~lakecat.metadata.expressions.evaluators.InclusiveMetricsEvaluator` on a data file
holding only those), and builds entries only for the records kept, remembering them for the
next plan. The entries are the ones :func:`~lakecat.metadata.manifests.manifest.read_manifest`
returns for the same records (inheritance applied, v3 first row ids included).

For a scan whose filter can rule partitions out, the manifest is not even decoded whole: it is
split into records, each decoded only up to its status and partition
(:func:`~lakecat.metadata.manifests.avro_decoder.split_records`, the rest skipped), and a
record is decoded in full when a scan first keeps its partition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from lakecat.metadata.errors import CorruptMetadata, LakecatError
from lakecat.metadata.expressions.evaluators import InclusiveMetricsEvaluator
from lakecat.metadata.expressions.expressions import AlwaysTrue
from lakecat.metadata.manifests.avro_decoder import RecordsDecoder, SplitRecords
from lakecat.metadata.manifests.datafile import DataFile, ManifestEntry, ManifestFile, Status
from lakecat.metadata.manifests.manifest import (
    DECODE_ERRORS,
    ManifestRecords,
    inherited_first_row_ids,
    record_decoder,
    record_partition_decoder,
    stats_map,
)
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.schema import Schema

PartitionTest = Callable[[tuple[Any, ...]], bool]
DELETED = int(Status.DELETED)


class ManifestEntries:
    """The live entries of one manifest, as records; entries built for the records a scan
    keeps (:meth:`select`). ``size`` is the record count (what a cache charges). Thread-safe:
    two threads may decode a record or build an entry twice, equal, and either is kept.

    Built from a manifest's entries (decoded straight from its bytes: all built already),
    from a manifest decoded whole to records (:class:`ManifestRecords`), or from one only split
    into records (:class:`~lakecat.metadata.manifests.avro_decoder.SplitRecords`: each
    record's status and partition decoded, the rest when a scan first needs it), which a scan
    that filters on partitions asks for. Not from a split manifest whose data files inherit
    v3 row ids: that inheritance needs every record, in order.
    """

    def __init__(
        self,
        manifest: ManifestFile,
        decoded: ManifestRecords | SplitRecords | list[ManifestEntry],
        *,
        specs: Mapping[int, PartitionSpec],
        schema: Schema,
    ) -> None:
        self._location = manifest.manifest_path
        self._body = b""
        self._bounds: list[tuple[int, int]] = []
        self._spec_id = manifest.partition_spec_id
        if isinstance(decoded, list):
            self._of_entries(decoded)
            return
        try:
            if isinstance(decoded, SplitRecords):
                if inherited_first_row_ids(manifest, ()) is not None:
                    raise ValueError("a manifest that passes on row ids must be decoded whole")
                maps_decoded = True
                self.size = len(decoded.starts)
                live = [i for i, (status, _) in enumerate(decoded.heads) if status != DELETED]
                ends = [*decoded.starts[1:], len(decoded.body)]
                self._body = decoded.body
                self._bounds = [(decoded.starts[i], ends[i]) for i in live]
                self._decode_records: RecordsDecoder | None = decoded.decode
                self._records: list[dict[str, Any] | None] = [None] * len(live)
                self._row_ids: list[int | None] | None = None
                partitions = [decoded.heads[i][1] for i in live]
            else:
                maps_decoded = decoded.maps_decoded
                self.size = len(decoded.records)
                row_ids = inherited_first_row_ids(manifest, decoded.records)
                live = [i for i, rec in enumerate(decoded.records) if rec["status"] != DELETED]
                self._decode_records = None
                self._records = [decoded.records[i] for i in live]
                self._row_ids = None if row_ids is None else [row_ids[i] for i in live]
                partitions = [decoded.records[i]["data_file"]["partition"] for i in live]
            self._decode = record_decoder(
                manifest,
                decoded.writer_schema,
                specs=specs,
                schema=schema,
                maps_decoded=maps_decoded,
            )
            read_partition = record_partition_decoder(
                manifest, decoded.writer_schema, specs=specs, schema=schema
            )
            index: dict[tuple[Any, ...], int] = {}
            self.partition_of = [
                index.setdefault(read_partition(p), len(index)) for p in partitions
            ]
        except LakecatError:
            raise
        except DECODE_ERRORS as exc:
            raise CorruptMetadata(f"cannot read manifest {self._location}: {exc!r}") from exc
        self.partitions = tuple(index)
        self._as_map = stats_map(maps_decoded)
        self._entries: list[ManifestEntry | None] = [None] * len(self._records)
        # what the metrics evaluator reads of each record, kept for the next filtered plan
        self._probes: list[DataFile | None] = [None] * len(self._records)

    def _of_entries(self, entries: list[ManifestEntry]) -> None:
        """Built from a manifest's entries, decoded straight from its bytes
        (:func:`~lakecat.metadata.manifests.manifest.decode_manifest_entries`): no records
        to keep, and each entry's data file is its own probe."""
        self.size = len(entries)
        live = [e for e in entries if e.status is not Status.DELETED]
        index: dict[tuple[Any, ...], int] = {}
        self.partition_of = [index.setdefault(e.data_file.partition, len(index)) for e in live]
        self.partitions = tuple(index)
        self._decode_records = None
        self._records = []
        self._row_ids = None
        self._as_map = stats_map(True)
        self._entries = list(live)
        self._probes = [None] * len(live)

    def _record(self, i: int) -> dict[str, Any]:
        """Live record ``i``, decoded now if the manifest was only split."""
        rec = self._records[i]
        if rec is None:
            assert self._decode_records is not None
            start, end = self._bounds[i]
            (rec,) = self._decode_records(self._body[start:end])
            self._records[i] = rec  # one list store: atomic
        return rec

    def select(
        self, partition: PartitionTest, metrics: InclusiveMetricsEvaluator
    ) -> list[ManifestEntry]:
        """The live entries, in manifest order, whose partition ``partition`` may match and
        whose metrics ``metrics`` may match."""
        kept = [partition(p) for p in self.partitions]
        if not any(kept):
            return []
        every_partition = all(kept)
        no_filter = isinstance(metrics.expr, AlwaysTrue)
        out = []
        try:
            for i, p in enumerate(self.partition_of):
                if not (every_partition or kept[p]):
                    continue
                entry = self._entries[i]
                if entry is not None:  # built already: its data file holds all of it
                    if no_filter:
                        if entry.data_file.record_count == 0:  # as the evaluator rules
                            continue
                    elif not metrics.eval(entry.data_file):
                        continue
                    out.append(entry)
                    continue
                df = self._record(i)["data_file"]
                if no_filter:
                    if df["record_count"] == 0:  # the evaluator's rule for empty files
                        continue
                elif not metrics.eval(self._probes[i] or self._probe(i, df)):
                    continue
                out.append(self._entry(i))
        except LakecatError:
            raise
        except DECODE_ERRORS as exc:
            raise CorruptMetadata(f"cannot read manifest {self._location}: {exc!r}") from exc
        return out

    def _probe(self, i: int, df: dict[str, Any]) -> DataFile:
        """A data file holding only what the metrics evaluator reads of record ``i``."""
        as_map = self._as_map
        probe = self._probes[i] = DataFile(
            df["file_path"],
            df["file_format"],
            (),
            df["record_count"],
            df["file_size_in_bytes"],
            self._spec_id,
            value_counts=as_map(df.get("value_counts")),
            null_value_counts=as_map(df.get("null_value_counts")),
            nan_value_counts=as_map(df.get("nan_value_counts")),
            lower_bounds=as_map(df.get("lower_bounds")),
            upper_bounds=as_map(df.get("upper_bounds")),
        )
        return probe

    def _entry(self, i: int) -> ManifestEntry:
        entry = self._entries[i]
        if entry is not None:
            return entry
        entry = self._decode(self._record(i))
        row_id = None if self._row_ids is None else self._row_ids[i]
        if row_id is not None:
            entry = replace(entry, data_file=replace(entry.data_file, first_row_id=row_id))
        self._entries[i] = entry  # one list store: atomic
        return entry
