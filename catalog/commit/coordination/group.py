"""Group commit: the holder of the commit lock also commits the appends queued behind it.

With the commit lock, commits to one table are serialized, and under contention the time the
lock is held bounds the table's throughput. Most of that time does not depend on how many
appends a commit carries: reading what the previous holder committed, writing the metadata
file, the swap. So, as databases flush a group of transactions with one log write, a lakecat
writer that finds the lock busy with a blind append ready queues it
(:mod:`lakecat.catalog.commit.coordination.queue`) and waits; the next holder committing an append
takes the queued ones and commits each as **its own snapshot** (its own snapshot id, parent,
sequence number, manifest list and summary, as if committed alone, one after the other) in one new
metadata version and one swap. Nothing changes for readers or for other engines: the history
is exactly the one the writers would have made one by one.

The rules that keep it safe:

* Only blind appends without an application id are queued or drained: they never conflict, so
  the holder has nothing to validate for them. Their data files and manifests are written by
  their owners before they queue; the holder writes only their manifest lists.
* A request is acknowledged to its owner only after the holder's swap landed. Whatever else
  happens, the owner finds its request claimed but not done, looks for its snapshot id in the
  table and, if it is not there, commits on its own: a snapshot id lands at most once, because
  every committer checks its base for it and the swap is a compare-and-swap.
* An owner that gives up (an error, an interrupt) while a holder has its request deletes none
  of its files: the holder may be committing them.
* A request whose owner died is dropped, never committed.
* A request carries the UUID of the table it was prepared for, and a holder commits it to no
  other: the queue is keyed by the table's name, which a dropped table hands on to the next.

Only the file lock of a SQLite catalog has a queue (its writers share one machine);
``commit.group-commit.enabled=false`` turns grouping off for a table
(:mod:`lakecat.catalog.commit.coordination.switches`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from lakecat.catalog.commit.conflicts import ATTEMPTS_KEY, WAIT_MS_KEY
from lakecat.catalog.commit.coordination import switches
from lakecat.catalog.commit.coordination.protocol import DONE, TicketState
from lakecat.catalog.commit.intent import Intent
from lakecat.catalog.commit.producer import PreparedAppend, SnapshotProducer
from lakecat.catalog.interrupts import deferred_interrupts
from lakecat.metadata.errors import LakecatError
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.manifests.cache import ManifestCache
from lakecat.metadata.manifests.datafile import ManifestContent, ManifestFile, PartitionFieldSummary
from lakecat.metadata.table.apply import apply
from lakecat.metadata.table.table_metadata import TableMetadata

if TYPE_CHECKING:
    from lakecat.catalog.commit.coordination.queue import Claim, FileCommitQueue, Ticket

log = logging.getLogger("lakecat.commit")

MAX_GROUP = 64  # queued appends one holder commits with its own


class QueueOwner(Protocol):
    """What grouping needs from a table's operations (``commit.TableOperations``)."""

    io: FileIO
    manifest_cache: ManifestCache

    def commit_queue(self, properties: Mapping[str, str]) -> FileCommitQueue | None: ...


def queue_for(
    ops: QueueOwner, intent: Intent, properties: Mapping[str, str]
) -> FileCommitQueue | None:
    """The table's queue if this intent takes part in group commits."""
    if not intent.can_be_handed_over:
        return None
    if not switches.group_commit(properties):
        return None
    return ops.commit_queue(properties)


# ---- the waiting side -----------------------------------------------------------------------
class Waiter:
    """One append's place in the queue, taken only when the lock is busy: the lock calls its
    hooks (``commit_lock.WaitHooks``)."""

    def __init__(
        self, queue: FileCommitQueue, producer: SnapshotProducer, base: TableMetadata
    ) -> None:
        self._queue = queue
        self._producer = producer
        self._base = base
        self.ticket: Ticket | None = None
        self.location: str | None = None  # where the holder that committed it said it is

    def waiting(self, stem: str) -> None:
        prepared = self._producer.prepared_append(self._base)
        # Once the request is in the queue a holder may commit its manifests: a Ctrl-C between
        # queuing it and holding its ticket would let this writer delete them as its own.
        with deferred_interrupts():
            self.ticket = self._queue.enqueue(stem, encode(prepared))

    def stop_waiting(self, rings: Sequence[bytes]) -> bool:
        """Stop waiting for the lock once a holder committed this append."""
        for message in rings:
            if message.startswith(DONE) and len(message) > len(DONE):
                with contextlib.suppress(UnicodeDecodeError):
                    self.location = message[len(DONE) :].decode()
        return self.ticket is not None and self.ticket.is_done()

    def settle(self) -> TicketState | None:
        """Where the request stands once the lock is had (or the wait for it timed out):
        ``None`` if it was never queued or is withdrawn now (commit on your own)."""
        if self.ticket is None:
            return None
        state = self.ticket.withdraw()
        if state is TicketState.WITHDRAWN:
            self.close()
            return None
        return state

    def may_delete_files(self) -> bool:
        """False while a holder may be committing this append's files."""
        return self.settle() is None

    def close(self) -> None:
        if self.ticket is not None:
            self.ticket.close()
            self.ticket = None


# ---- the holding side -----------------------------------------------------------------------
@dataclass
class Batch:
    """The queued appends one holder added to its new metadata."""

    metadata: TableMetadata
    claims: list[Claim] = field(default_factory=list)
    producers: list[SnapshotProducer] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # written for this attempt only

    def landed(self, location: str) -> None:
        """After the swap to ``location`` landed: tell each owner."""
        for claim in self.claims:
            claim.done(location)

    def unused_manifests(self) -> list[str]:
        return [p for producer in self.producers for p in producer.unused_manifests()]


def drain(
    ops: QueueOwner, queue: FileCommitQueue, *, base: TableMetadata, head: TableMetadata
) -> Batch:
    """Claim the queued appends and apply each, as its own snapshot, on top of ``head`` (the
    holder's own new metadata, built on ``base``, the committed version)."""
    batch = Batch(head)
    taken = 0
    while taken < MAX_GROUP:
        # those queued now, then those that came while these were applied
        claims = queue.claim(MAX_GROUP - taken)
        taken += len(claims)
        if not claims or not _apply_claims(ops, claims, base, batch):
            break
    if batch.claims:
        log.debug(
            "group commit",
            extra={"snapshot_ids": [p.intent.snapshot_id for p in batch.producers]},
        )
    return batch


def _apply_claims(ops: QueueOwner, claims: list[Claim], base: TableMetadata, batch: Batch) -> bool:
    """Apply each claimed append on top of ``batch``; False if one went back to its owner
    (claiming again would find it again)."""
    gave_back = False
    for claim in claims:
        try:
            prepared = decode(claim.payload)
        except ValueError as exc:  # e.g. a request of another lakecat version
            log.info("leaving a queued commit request to its writer: %s", exc)
            claim.give_back()
            gave_back = True
            continue
        if prepared.table_uuid != base.table_uuid:  # prepared for a table since dropped
            log.info(
                "leaving queued append %s to its writer: it was prepared for table %s, not %s",
                prepared.snapshot_id,
                prepared.table_uuid,
                base.table_uuid,
            )
            claim.give_back()
            gave_back = True
            continue
        if base.has_snapshot(prepared.snapshot_id):
            claim.done(None)  # committed already (by its owner, after a lost hand-over)
            continue
        producer = SnapshotProducer.for_prepared(ops.io, prepared, ops.manifest_cache)
        extra = {ATTEMPTS_KEY: "1", WAIT_MS_KEY: "0"}  # queued on its first attempt
        try:
            produced = producer.produce(batch.metadata, attempt=1, extra_summary=extra)
            batch.files.extend(produced.attempt_files)
            batch.metadata = apply(batch.metadata, list(produced.updates))
        except LakecatError as exc:
            # Left claimed: its owner looks for it in the table, then commits it itself and
            # meets the same error, if any, as its own.
            log.warning("could not commit queued append %s: %s", prepared.snapshot_id, exc)
            continue
        finally:
            batch.files.extend(producer.written)
        batch.claims.append(claim)
        batch.producers.append(producer)
    return not gave_back


# ---- the request's wire form ----------------------------------------------------------------
FORMAT = 2  # 2: with the table's UUID


def encode(prepared: PreparedAppend) -> bytes:
    return json.dumps(
        {
            "format": FORMAT,
            "snapshot-id": prepared.snapshot_id,
            "table-uuid": prepared.table_uuid,
            "branch": prepared.branch,
            "manifests": [_manifest_json(m) for m in prepared.manifests],
            "change-summary": dict(prepared.change_summary),
            "extra-summary": dict(prepared.extra_summary),
            "queued-at-ms": int(time.time() * 1000),
        }
    ).encode()


def decode(payload: bytes) -> PreparedAppend:
    """The queued append; ``ValueError`` if it cannot be read."""
    try:
        doc = json.loads(payload)
        if doc.get("format") != FORMAT:
            raise ValueError(f"unknown request format {doc.get('format')!r}")
        return PreparedAppend(
            snapshot_id=int(doc["snapshot-id"]),
            branch=str(doc["branch"]),
            manifests=tuple(_manifest_from_json(m) for m in doc["manifests"]),
            change_summary=tuple((str(k), str(v)) for k, v in doc["change-summary"].items()),
            extra_summary=tuple((str(k), str(v)) for k, v in doc["extra-summary"].items()),
            table_uuid=str(doc["table-uuid"]),
        )
    except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as exc:
        raise ValueError(f"unreadable commit request: {exc}") from exc


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode()


def _unb64(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value)


def _manifest_json(m: ManifestFile) -> dict[str, Any]:
    return {
        "path": m.manifest_path,
        "length": m.manifest_length,
        "spec-id": m.partition_spec_id,
        "content": int(m.content),
        "sequence-number": m.sequence_number,
        "min-sequence-number": m.min_sequence_number,
        "added-snapshot-id": m.added_snapshot_id,
        "counts": [
            m.added_files_count,
            m.existing_files_count,
            m.deleted_files_count,
            m.added_rows_count,
            m.existing_rows_count,
            m.deleted_rows_count,
        ],
        "partitions": None
        if m.partitions is None
        else [
            [p.contains_null, p.contains_nan, _b64(p.lower_bound), _b64(p.upper_bound)]
            for p in m.partitions
        ],
        "key-metadata": _b64(m.key_metadata),
    }


def _manifest_from_json(d: dict[str, Any]) -> ManifestFile:
    counts = [int(c) for c in d["counts"]]
    if len(counts) != 6:
        raise ValueError("a manifest needs six counts")
    partitions = d["partitions"]
    return ManifestFile(
        manifest_path=str(d["path"]),
        manifest_length=int(d["length"]),
        partition_spec_id=int(d["spec-id"]),
        content=ManifestContent(int(d["content"])),
        sequence_number=int(d["sequence-number"]),
        min_sequence_number=int(d["min-sequence-number"]),
        added_snapshot_id=int(d["added-snapshot-id"]),
        added_files_count=counts[0],
        existing_files_count=counts[1],
        deleted_files_count=counts[2],
        added_rows_count=counts[3],
        existing_rows_count=counts[4],
        deleted_rows_count=counts[5],
        partitions=None
        if partitions is None
        else tuple(
            PartitionFieldSummary(
                contains_null=bool(p[0]),
                contains_nan=None if p[1] is None else bool(p[1]),
                lower_bound=_unb64(p[2]),
                upper_bound=_unb64(p[3]),
            )
            for p in partitions
        ),
        key_metadata=_unb64(d["key-metadata"]),
    )
