"""The commit pipeline: optimistic concurrency with re-apply and retry.

Every write goes through :func:`commit_intent` (data changes) or :func:`commit_updates`
(metadata-only changes). One attempt is:

1. **validate**: check the intent against every commit that landed on the branch since the
   operation's starting snapshot (:mod:`lakecat.catalog.commit.conflicts`); a conflict raises a
   typed :class:`CommitConflict` after deleting every file this operation wrote. A base whose table
   UUID is not the one the operation started from (the table was dropped and re-created under
   its name) fails the ``assert-table-uuid`` requirement the same way;
2. **produce**: write what this base needs (manifest list, rewritten or merged manifests; new
   data files and their manifests were written once and are reused), then the new metadata.json
   from the pure ``apply(base, updates)``;
3. **swap**: the catalog's compare-and-swap of the metadata pointer
   (:meth:`lakecat.catalog.store.store.SqlCatalogStore.swap_metadata_location` has its contract);
4. **after the swap**: tell the appends grouped into this commit, leave the lock hint, release
   the lock, cache the new metadata, delete superseded manifests and metadata files.

An attempt moves through three phases (:class:`Phase`), and the phase alone decides what a
failure may delete:

* ``BUILDING``: nothing was sent. A failure deletes this attempt's manifest lists and
  metadata file; when the operation gives up, also every file it wrote (data files included).
* ``SWAP_SENT``: from the moment the swap may have been sent. Nothing is deleted unless the
  outcome is known not to have landed:

  - :class:`CommitFailed` (another pointer), :class:`NoSuchTable`, :class:`CatalogRefused`, or
    :class:`CatalogUnavailable` (not sent): back to ``BUILDING``. A lost swap is retried after
    refreshing the base and a jittered exponential backoff (``commit.retry.*`` table
    properties); an unreachable catalog is retried at most ``commit.retry.num-retries`` times;
    a missing table or a refusal (read-only database, no permission) fails at once;
  - :class:`CommitStateUnknown`: the pointer is re-read. This operation's snapshot id (stable
    across attempts) in the table, or the pointer at our file, means committed; another
    pointer without it means not landed (retried; this attempt's files are kept, as the swap
    could in theory still be applied late, and orphan removal takes them); a catalog that
    cannot be read raises ``CommitStateUnknown`` to the caller, deleting nothing;
  - anything else (an interrupt that could not be deferred, an unexpected error): unknown,
    nothing is deleted.
* ``LANDED``: the swap committed. Every step after it is best effort: a failure, a
  ``KeyboardInterrupt`` included, is logged as a warning and listed in
  :attr:`CommitResult.warnings`, and the commit is reported as landed.

From just before the swap until the steps after it are done, Ctrl-C is held back
(:mod:`lakecat.catalog.interrupts`) and delivered when the window closes, with a note saying
whether the commit landed: an interrupt never decides which phase a failure belongs to.

An attempt runs under the table's advisory commit lock
(:mod:`lakecat.catalog.commit.coordination.lock`) when it can be had: it first moves the base to the
current pointer (on a first attempt, to the location the lock's previous holder committed to this
table, when the lock carries that hint), so lakecat writers queue for milliseconds instead of losing
the swap and redoing the attempt. What does not depend on the base (the new data files' manifests)
is written before the lock is taken. The lock decides nothing: the swap alone does, and a writer
without the lock is as safe as one with it. A lock that fails is reported in
:attr:`CommitResult.warnings`. A blind append that finds the lock busy queues itself for the holder
instead, which commits it as its own snapshot in the holder's metadata version (a group commit,
:mod:`lakecat.catalog.commit.coordination.group`); the queued writer stops waiting as soon as the
holder says it landed, and otherwise settles when it gets the lock.

Blind appends cannot conflict, so they retry on lost swaps until
``commit.retry.total-timeout-ms`` regardless of ``commit.retry.num-retries``: an append never
fails because of other writers.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.catalog.commit.conflicts import (
    ATTEMPTS_KEY,
    OPERATION_KEY,
    WAIT_MS_KEY,
    ConcurrentCommit,
    MetadataDelta,
    app_versions,
    carried,
    check_all,
    check_branch,
    check_transaction,
)
from lakecat.catalog.commit.coordination.group import Batch, Waiter, drain, queue_for
from lakecat.catalog.commit.coordination.lock import Hold, WaitHooks
from lakecat.catalog.commit.coordination.protocol import TicketState
from lakecat.catalog.commit.intent import Intent, OpKind, commit_parent
from lakecat.catalog.commit.moves import ROW_MOVES_KEY, RowMoves, read_row_moves
from lakecat.catalog.commit.producer import NO_SWAP, DeleteSwap, SnapshotProducer, data_dir
from lakecat.catalog.commit.retarget import retarget, row_versions
from lakecat.catalog.interrupts import DeferredInterrupts
from lakecat.catalog.retry import RetryClock, RetryPolicy
from lakecat.metadata import properties as P
from lakecat.metadata.deletes import PositionIndex
from lakecat.metadata.errors import (
    CatalogRefused,
    CatalogUnavailable,
    CommitFailed,
    CommitStateUnknown,
    ConcurrentDeleteRead,
    ConcurrentRowChange,
    LakecatError,
    NoSuchTable,
    StorageError,
    UnsupportedFeature,
)
from lakecat.metadata.expressions.evaluators import (
    InclusiveMetricsEvaluator,
    PartitionEvaluator,
    to_arrow_filter,
)
from lakecat.metadata.expressions.expressions import (
    AlwaysTrue,
    BoundExpression,
    bind,
    referenced_field_ids,
)
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.parquet import partition_path, read_data_file
from lakecat.metadata.io.position_deletes import (
    FileDeletes,
    VectorTarget,
    deleted_positions,
    write_deletion_vector_file,
    write_position_delete_files,
)
from lakecat.metadata.manifests.cache import ManifestCache
from lakecat.metadata.manifests.datafile import Content, DataFile, ManifestContent, Status
from lakecat.metadata.manifests.delete_index import live_deletes_naming, named_data_file
from lakecat.metadata.manifests.manifest import read_manifest_list
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.name_mapping import NameMapping, name_mapping_of
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.apply import apply, require_writable
from lakecat.metadata.table.metadata_files import (
    new_metadata_location,
    parse_version,
    write_metadata,
)
from lakecat.metadata.table.replace import replacement_updates
from lakecat.metadata.table.snapshots import REPLACE, Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.updates import AssertTableUUID, TableRequirement, TableUpdate

if TYPE_CHECKING:
    from lakecat.catalog.commit.coordination.queue import FileCommitQueue

log = logging.getLogger("lakecat.commit")

# A concurrently added data file of up to this many rows is read to tell whether it really
# holds a row the operation's filter matches (_CommitWindow._holds_match).
_EXACT_MATCH_MAX_ROWS = 1_000_000


class TableOperations(Protocol):
    """What the commit loop needs from a catalog for one table."""

    io: FileIO
    manifest_cache: ManifestCache

    @property
    def name(self) -> str: ...

    def refresh(self) -> tuple[TableMetadata, str]:
        """The current metadata and its location, read from the catalog."""
        ...

    def current_location(self) -> str:
        """The current metadata location (the pointer only)."""
        ...

    def load(self, location: str) -> TableMetadata:
        """The metadata in the file at ``location``."""
        ...

    def swap(self, *, expected: str, new: str) -> None:
        """Compare-and-swap the metadata pointer (the contract is
        :meth:`lakecat.catalog.store.store.SqlCatalogStore.swap_metadata_location`'s)."""
        ...

    def committed(self, location: str, metadata: TableMetadata) -> None:
        """Told after a swap to ``location`` landed (the metadata may be kept for reuse)."""
        ...

    def commit_lock(
        self,
        properties: Mapping[str, str],
        *,
        hooks: WaitHooks | None = None,
        timeout_s: float | None = None,
        faults: list[str] | None = None,
    ) -> AbstractContextManager[Hold | None]:
        """The advisory commit lock (:mod:`lakecat.catalog.commit.coordination.lock`); yields the
        hold, or None when not held. ``hooks`` and ``faults`` are as in ``CommitLock.hold``;
        ``timeout_s`` overrides ``commit.lock.acquire-timeout-ms``."""
        ...

    def commit_queue(self, properties: Mapping[str, str]) -> FileCommitQueue | None:
        """The queue of appends waiting for the lock
        (:mod:`lakecat.catalog.commit.coordination.queue`), or None where group commit is not
        available."""
        ...


@dataclass(frozen=True)
class CommitResult:
    """A commit that landed (or was skipped as already committed).

    ``warnings`` lists what went wrong without changing that outcome: commit-lock faults
    (the commit went on without the lock) and best-effort steps after the swap that failed.

    Its repr is one short line (the snapshot, its operation and counts, from the snapshot's
    summary in ``metadata``), not the whole metadata, which grows with every commit."""

    metadata: TableMetadata
    metadata_location: str
    snapshot_id: int | None
    attempts: int
    wait_ms: int
    skipped: bool = False  # an (app id, version) already committed and the caller chose to skip
    warnings: tuple[str, ...] = ()
    table: str | None = field(default=None, compare=False)  # its name, for messages and repr

    def __repr__(self) -> str:
        # e.g. CommitResult(table='db.t', snapshot_id=123, operation='merge', attempts=1,
        # added_files=2, added_records=10, deleted_files=1, deleted_records=4, warnings=0); a
        # metadata-only commit has no snapshot: CommitResult(table='db.t', snapshot_id=None, ...)
        sid = self.snapshot_id
        snapshot = (
            self.metadata.snapshot_by_id(sid)
            if sid is not None and self.metadata.has_snapshot(sid)
            else None
        )
        parts = ([f"table={self.table!r}"] if self.table else []) + [f"snapshot_id={sid}"]
        counts: list[str] = []
        if snapshot is not None:
            summary = snapshot.summary
            # lakecat records the operation the caller ran ("merge") next to the snapshot's
            # Iceberg operation ("overwrite")
            parts.append(f"operation={summary.get(OPERATION_KEY, snapshot.operation)!r}")
            for key, name in (
                ("added-data-files", "added_files"),
                ("added-records", "added_records"),
                ("deleted-data-files", "deleted_files"),
                ("deleted-records", "deleted_records"),
            ):
                value = summary.get(key)
                if isinstance(value, str) and value.isdecimal():
                    counts.append(f"{name}={int(value)}")
        parts.append(f"attempts={self.attempts}")
        # a skipped commit added nothing: the counts are the earlier commit's, not its own
        parts += ["skipped=True"] if self.skipped else counts
        parts.append(f"warnings={len(self.warnings)}")
        return f"CommitResult({', '.join(parts)})"


def commit_intent(
    ops: TableOperations,
    intent: Intent,
    *,
    start: TableMetadata | None,
    start_location: str | None = None,
) -> CommitResult:
    """Commit one operation's intent with validate / re-apply / retry. See module docstring.

    With ``start_location`` (the location ``start`` was read from) the first attempt builds on
    ``start`` without re-reading the catalog: if another writer moved the pointer meanwhile,
    the swap fails and the loop refreshes, so nothing is lost and one read is saved.
    """
    return _IntentCommit(ops, intent, start, start_location).run()


class Phase(enum.Enum):
    """Where an attempt stands relative to its swap: what a failure may delete."""

    BUILDING = "building"  # nothing sent: this attempt's files may go
    SWAP_SENT = "swap-sent"  # may have landed: nothing is deleted
    LANDED = "landed"  # committed: only best-effort steps follow


class Landing:
    """One attempt's swap and the steps after it, with the point of no return made explicit.

    Use it as a context manager around the attempt, lock included: call :meth:`swap` when the
    new metadata file is written, and :meth:`after` for each step once it landed. Leaving the
    block after the swap landed never raises for those steps or for the lock's release (they
    are logged and kept in ``warnings``); a SIGINT that arrived from the swap on is delivered
    on leaving (see :mod:`lakecat.catalog.interrupts`)."""

    def __init__(self, ops: TableOperations, warnings: list[str]) -> None:
        self.ops = ops
        self.warnings = warnings
        self.phase = Phase.BUILDING
        self.location: str | None = None  # the metadata file that landed
        self._interrupts = DeferredInterrupts()

    def swap(self, *, expected: str, new: str, snapshot_id: int | None) -> BaseException | None:
        """Swap the pointer from ``expected`` to ``new``. ``None``: it landed (the phase is
        ``LANDED``). Otherwise the reason it definitely did not land and may be retried (a lost
        race, an unreachable catalog, an unknown outcome the catalog shows did not land), the
        phase back at ``BUILDING``. A missing table or a refusal raises, also back at
        ``BUILDING``; an unknown outcome that cannot be resolved raises in ``SWAP_SENT``."""
        self._interrupts.start()
        self.phase = Phase.SWAP_SENT
        try:
            _swap(self.ops, expected, new, snapshot_id)
        except (NoSuchTable, CatalogRefused):
            self.phase = Phase.BUILDING  # definitely not committed: the store's contract
            raise
        except (CommitFailed, CatalogUnavailable, _NotLanded) as exc:
            self.phase = Phase.BUILDING
            return exc
        self.phase = Phase.LANDED
        self.location = new
        return None

    def after(self, step: str, action: Callable[[], object]) -> None:
        """Run a best-effort step after the swap landed: a failure cannot fail the commit."""
        try:
            action()
        except (Exception, KeyboardInterrupt) as exc:
            self.warn(step, exc)

    def warn(self, step: str, exc: BaseException) -> None:
        log.warning(
            "commit landed; %s failed: %r",
            step,
            exc,
            extra={"table": self.ops.name, "location": self.location},
        )
        self.warnings.append(f"{step}: {type(exc).__name__}: {exc}")

    @contextlib.contextmanager
    def held(self, lock: AbstractContextManager[Hold | None]) -> Iterator[Hold | None]:
        """Hold the commit lock for the block; once the swap landed, a failure to release it
        is a warning, not an error."""
        hold = lock.__enter__()
        try:
            yield hold
        except BaseException as exc:
            if not lock.__exit__(type(exc), exc, exc.__traceback__):
                raise
        else:
            try:
                lock.__exit__(None, None, None)
            except (Exception, KeyboardInterrupt) as exc:
                if self.phase is not Phase.LANDED:
                    raise
                self.warn("releasing the commit lock", exc)

    def __enter__(self) -> Landing:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        name = self.ops.name
        if self.phase is Phase.LANDED:
            note = f"lakecat: the commit of {name} landed ({self.location}) before this interrupt"
        elif self.phase is Phase.BUILDING:
            note = f"lakecat: the commit of {name} did not land"
        else:
            note = f"lakecat: the commit of {name} may or may not have landed"
        self._interrupts.stop(note)


@dataclass(frozen=True)
class _Handed:
    """This append, committed by a lock holder's group commit: where to read the table."""

    location: str | None  # None: ask the catalog
    metadata: TableMetadata | None = None


@dataclass(frozen=True)
class _Swapped:
    metadata: TableMetadata
    location: str
    batch: Batch | None


class _IntentCommit:
    """The state one operation's commit attempts share."""

    def __init__(
        self,
        ops: TableOperations,
        intent: Intent,
        start: TableMetadata | None,
        start_location: str | None,
    ) -> None:
        self.ops = ops
        self.intent = intent
        self.start = start
        if start is not None and start_location is not None:
            self.base, self.base_location = start, start_location
        else:
            self.base, self.base_location = ops.refresh()
        self.same_table = AssertTableUUID((start or self.base).table_uuid)
        policy = RetryPolicy.from_properties(self.base.properties)
        self.clock = RetryClock(policy, unbounded_retries=intent.kind is OpKind.APPEND)
        self.producer = SnapshotProducer(ops.io, intent, ops.manifest_cache)
        self.window = _CommitWindow(ops.io, intent, ops.manifest_cache)
        self.queue = queue_for(ops, intent, self.base.properties)
        self.waiter: Waiter | None = None
        self.attempt = 0
        self.pending: list[str] = []  # this attempt's manifest lists and metadata file
        self.landing: Landing | None = None  # the current attempt's
        self.warnings: list[str] = []

    def run(self) -> CommitResult:
        ops = self.ops
        try:
            require_writable(self.base)  # before anything is written
            require_row_lineage(self.base, self.intent)
            self.producer.prepare(self._target(self.base)[1])
            while True:
                self.attempt += 1
                self.pending = []
                result = self._attempt()
                if result is not None:
                    return result
                if not self.clock.may_retry(self.attempt):
                    raise self.clock.give_up(ops.name, self.attempt)
                self.clock.wait(self.attempt)
                self.base, self.base_location = ops.refresh()
        except BaseException:
            # Only a commit known not to have landed deletes: when the swap may have been
            # sent, or landed, every file stays (orphan removal takes what was not needed).
            if self.landing is None or self.landing.phase is Phase.BUILDING:
                # Definitely not committed (conflict, exhausted retries, a failed write, an
                # error before the swap): every file this operation wrote goes, data files
                # included, unless a lock holder took this append to commit it.
                ours = [*intent_files(self.intent), *self.producer.written, *self.window.written]
                if self.waiter is not None and not self.waiter.may_delete_files():
                    ours = []
                delete_quietly(ops.io, [*ours, *self.pending])
            raise
        finally:
            if self.waiter is not None:
                self.waiter.close()

    def _attempt(self) -> CommitResult | None:
        """One attempt; ``None`` when it did not land and may be retried."""
        ops = self.ops
        if self.queue is not None and self.attempt == 1:
            self.waiter = Waiter(self.queue, self.producer, self.base)
        hooks = self.waiter if self.attempt == 1 else None
        self.landing = landing = Landing(ops, self.warnings)
        with landing:
            lock_cm = ops.commit_lock(self.base.properties, hooks=hooks, faults=self.warnings)
            with landing.held(lock_cm) as lock:
                handed = self._settle(lock)
                outcome = None if handed is not None else self._build_and_swap(lock, landing)
            if isinstance(outcome, _Swapped):
                return self._landed(outcome, landing)
        if handed is not None:
            return self._handed_result(handed)
        return outcome  # skipped as already committed, or None: retry

    def _target(self, base: TableMetadata) -> tuple[list[TableUpdate], TableMetadata]:
        """The snapshot's base: ``base``, or for a replace of the table's definition the
        update records of the replace and ``base`` with them applied (no ``main`` branch)."""
        replacement = self.intent.replacement
        if replacement is None:
            return [], base
        updates = replacement_updates(base, replacement)
        return updates, apply(base, updates)

    def _landed(self, swapped: _Swapped, landing: Landing) -> CommitResult:
        """The steps after a swap that landed, the lock released: none can fail the commit."""
        new, new_location = swapped.metadata, swapped.location
        unused = (
            self.producer.unused_manifests()
            + self.window.unused_carried()
            + self.window.replaced_intent_files()
        )
        if swapped.batch is not None:
            unused += swapped.batch.unused_manifests()
        landing.after("caching the new metadata", lambda: self.ops.committed(new_location, new))
        landing.after(
            "deleting superseded files",
            lambda: _after_commit(self.ops.io, self.base, self.base_location, new, unused),
        )
        return CommitResult(
            new,
            new_location,
            self.intent.snapshot_id,
            self.attempt,
            int(self.clock.waited_ms),
            warnings=tuple(self.warnings),
            table=self.ops.name,
        )

    def _settle(self, lock: Hold | None) -> _Handed | None:
        """Where the attempt starts once the lock is had (or not: after its timeout, or when
        the holder said it committed this append).

        ``None``: commit, on a fresh base when the lock is held. Otherwise a lock holder
        committed this append (it was queued while the lock was busy)."""
        state = self.waiter.settle() if self.waiter is not None and self.attempt == 1 else None
        if state is None:  # not queued, or withdrawn: commit on our own
            if lock is not None:  # writers that take the lock wait here, not losing swaps
                hint = lock.hint(self.same_table.uuid) if self.attempt == 1 else None
                self.base, self.base_location = _fresh(
                    self.ops, self.base, self.base_location, hint
                )
            return None
        assert self.waiter is not None
        hint = lock.hint(self.same_table.uuid) if lock is not None else self.waiter.location
        if state is TicketState.CLAIMED and lock is None:  # its holder may still be at work
            state, hint = self._wait_for_holder()
        if state is TicketState.DONE:
            return _Handed(hint)
        # Claimed, and the holder finished without saying it landed (it lost its swap, failed
        # or died): the table tells.
        self.base, self.base_location = self.ops.refresh()
        if self.base.has_snapshot(self.intent.snapshot_id):
            return _Handed(self.base_location, self.base)
        self.waiter.close()
        return None

    def _wait_for_holder(self) -> tuple[TicketState, str | None]:
        """Wait for the lock holder that claimed this append to finish."""
        assert self.waiter is not None
        elapsed_ms = (time.monotonic() - self.clock.start) * 1000
        timeout_s = max(0.0, self.clock.policy.total_timeout_ms - elapsed_ms) / 1000
        with self.ops.commit_lock(self.base.properties, timeout_s=timeout_s) as lock:
            if lock is None:
                raise CommitStateUnknown(
                    f"{self.ops.name}: append {self.intent.snapshot_id} was taken into another "
                    f"writer's group commit, which had not finished after {timeout_s:.0f} s; "
                    f"check whether snapshot {self.intent.snapshot_id} is in the table"
                )
            return self.waiter.settle() or TicketState.CLAIMED, lock.hint(self.same_table.uuid)

    def _handed_result(self, handed: _Handed) -> CommitResult:
        ops, snapshot_id = self.ops, self.intent.snapshot_id
        metadata, location = handed.metadata, handed.location
        if metadata is None:
            location = location or ops.current_location()
            metadata = _load_or_none(ops, location)
            if metadata is None or not metadata.has_snapshot(snapshot_id):
                # e.g. a stale hint; the commit landed all the same (the holder said so)
                metadata, location = ops.refresh()
        assert location is not None
        log.debug(
            "append committed by the commit lock's holder",
            extra={"table": ops.name, "snapshot_id": snapshot_id, "location": location},
        )
        return CommitResult(
            metadata,
            location,
            snapshot_id,
            1,
            int(self.clock.waited_ms),
            warnings=tuple(self.warnings),
            table=self.ops.name,
        )

    def _build_and_swap(
        self, lock: Hold | None, landing: Landing
    ) -> _Swapped | CommitResult | None:
        """Build on the base and swap: what landed, a skip (already committed), or ``None``
        when it did not land and may be retried."""
        ops, intent, base, base_location = self.ops, self.intent, self.base, self.base_location
        self.same_table.validate(base)
        already = _already_committed(intent, base)
        if already is not None:
            delete_quietly(
                ops.io, intent_files(intent) + self.producer.written + self.window.written
            )
            return CommitResult(
                base,
                base_location,
                already,
                self.attempt,
                int(self.clock.waited_ms),
                True,
                warnings=tuple(self.warnings),
                table=self.ops.name,
            )
        if self.intent.replacement is None:
            self.window.validate(self.start or base, base)
        # else: a replace reads no rows; it checks only that the ids it drew still hold
        replacing, target = self._target(base)
        carried = self.window.carried_deletes(base)
        swap = self.window.merged_vectors(base)
        if swap is NO_SWAP:
            swap = self.window.moved_positions(base)
        extra = {ATTEMPTS_KEY: str(self.attempt), WAIT_MS_KEY: str(int(self.clock.waited_ms))}
        produced = self.producer.produce(
            target, attempt=self.attempt, extra_summary=extra, extra_files=carried, swap=swap
        )
        self.pending.extend(produced.attempt_files)
        new = apply(base, [*replacing, *produced.updates], base_location=base_location)
        batch = None
        if lock is not None and self.queue is not None:  # commit the appends queued behind us
            batch = drain(ops, self.queue, base=base, head=new)
            self.pending.extend(batch.files)
            new = batch.metadata
        new_location = new_metadata_location(base.location, base_location, new.properties)
        self.pending.append(new_location)
        write_metadata(ops.io, new_location, new)
        _log_attempt(ops, intent, base, self.attempt, self.clock)
        lost = landing.swap(
            expected=base_location, new=new_location, snapshot_id=intent.snapshot_id
        )
        if lost is not None:
            self.clock.lost(lost)
            if not isinstance(lost, _NotLanded):
                delete_quietly(ops.io, self.pending)
            # else: this attempt's files are kept (see the module docstring)
            self.pending = []
            return None
        if batch is not None:
            landing.after(
                "telling the grouped appends' writers", partial(batch.landed, new_location)
            )
        if lock is not None:
            landing.after(
                "recording the lock hint", partial(lock.publish, new_location, new.table_uuid)
            )
        return _Swapped(new, new_location, batch)


def _load_or_none(ops: TableOperations, location: str) -> TableMetadata | None:
    try:
        return ops.load(location)
    except LakecatError as exc:
        log.debug("could not read %s (%s); asking the catalog", location, exc)
        return None


def commit_updates(
    ops: TableOperations,
    build: Callable[[TableMetadata], tuple[Sequence[TableUpdate], Sequence[TableRequirement]]],
    *,
    table_uuid: str | None = None,
) -> CommitResult:
    """Commit a metadata-only change, rebuilt from each refreshed base.

    ``build`` returns the update records and the requirements they rely on; a requirement that
    no longer holds on a refreshed base raises its typed error (``RequirementFailed``, or the
    ``MetadataChanged`` the builder chose) and nothing is retried. ``table_uuid`` is the table
    the caller loaded (a ``RequirementFailed`` if the name now holds another table); by default
    the table found on the first read. Phases and outcomes are as for :func:`commit_intent`.
    """
    base, base_location = ops.refresh()
    require_writable(base)
    same_table = AssertTableUUID(table_uuid or base.table_uuid)
    clock = RetryClock(RetryPolicy.from_properties(base.properties), unbounded_retries=False)
    warnings: list[str] = []
    attempt = 0
    while True:
        attempt += 1
        with Landing(ops, warnings) as landing:
            with landing.held(ops.commit_lock(base.properties, faults=warnings)) as lock:
                if lock is not None:
                    hint = lock.hint(same_table.uuid) if attempt == 1 else None
                    base, base_location = _fresh(ops, base, base_location, hint)
                same_table.validate(base)
                updates, requirements = build(base)
                for requirement in requirements:
                    requirement.validate(base)
                new = apply(base, list(updates), base_location=base_location)
                if new is base:  # nothing to change: no commit
                    return CommitResult(
                        base,
                        base_location,
                        None,
                        attempt,
                        int(clock.waited_ms),
                        warnings=tuple(warnings),
                        table=ops.name,
                    )
                new_location = new_metadata_location(base.location, base_location, new.properties)
                write_metadata(ops.io, new_location, new)
                try:
                    lost = landing.swap(expected=base_location, new=new_location, snapshot_id=None)
                except BaseException:
                    if landing.phase is Phase.BUILDING:
                        delete_quietly(ops.io, [new_location])
                    raise
                if lost is None and lock is not None:
                    landing.after(
                        "recording the lock hint",
                        partial(lock.publish, new_location, new.table_uuid),
                    )
            if lost is None:
                landing.after("caching the new metadata", partial(ops.committed, new_location, new))
                landing.after(
                    "deleting superseded metadata files",
                    partial(_prune_metadata_files, ops.io, base, base_location, new),
                )
                return CommitResult(
                    new,
                    new_location,
                    None,
                    attempt,
                    int(clock.waited_ms),
                    warnings=tuple(warnings),
                    table=ops.name,
                )
        clock.lost(lost)
        if not isinstance(lost, _NotLanded):
            delete_quietly(ops.io, [new_location])
        if not clock.may_retry(attempt):
            raise clock.give_up(ops.name, attempt)
        clock.wait(attempt)
        base, base_location = ops.refresh()


def _fresh(
    ops: TableOperations, base: TableMetadata, base_location: str, hint: str | None
) -> tuple[TableMetadata, str]:
    """The table's current metadata: ``base`` itself if the pointer has not moved.

    ``hint``, the location the commit lock's previous holder committed, stands in for reading
    the pointer when it is ``base_location`` or a later version of it: if it is stale, the
    swap fails and the next attempt reads the pointer. An earlier version than the base means
    someone committed without the lock: the pointer is read."""
    if hint == base_location:
        return base, base_location
    if hint is not None and parse_version(hint) > parse_version(base_location):
        try:
            return ops.load(hint), hint
        except LakecatError as exc:  # e.g. a hinted file since removed: ask the catalog
            log.debug("commit hint %s not usable (%s)", hint, exc)
    location = ops.current_location()
    return (base, base_location) if location == base_location else (ops.load(location), location)


# ---- validation window ------------------------------------------------------------------
class _CommitWindow:
    """The commits between the intent's starting snapshot and a base, read once each."""

    def __init__(self, io: FileIO, intent: Intent, manifests: ManifestCache) -> None:
        self.io = io
        self.intent = intent
        self.manifests = manifests
        self._seen: dict[int, ConcurrentCommit] = {}
        self._deleted: dict[tuple[str, str], PositionIndex] = {}
        self._matches: dict[str, bool] = {}  # data file path -> holds a row the filter matches
        # carried-over deletes, by the concurrent delete files they carry: written once each
        self._carried: dict[frozenset[str], tuple[DataFile, ...]] = {}
        self._last_carried: tuple[DataFile, ...] = ()
        self._swaps: dict[frozenset[tuple[str, int | None]], DeleteSwap] = {}
        self._last_swap: DeleteSwap = NO_SWAP
        self._moves: dict[str, RowMoves | None] = {}  # row-moves records by location
        # every carried-over delete file and merged deletion vector written, any attempt
        self.written: list[str] = []

    def validate(self, start: TableMetadata, base: TableMetadata) -> None:
        intent = self.intent
        check_branch(intent, (name for name, ref in base.refs.items() if ref.ref_type == "branch"))
        delta = metadata_delta(start, base)
        if intent.kind is OpKind.APPEND:
            return  # blind appends read nothing and never conflict
        concurrent = self._concurrent(base)
        schema = start.schema()
        bound = bind(schema, intent.read_filter)
        metrics = InclusiveMetricsEvaluator(schema, bound)
        partition_evals: dict[int, PartitionEvaluator] = {}
        specs = base.specs_by_id()

        def may_match(f: DataFile) -> bool:
            if intent.read_partitions is not None:
                spec_ids = {spec_id for spec_id, _ in intent.read_partitions}
                if f.spec_id in spec_ids and (f.spec_id, f.partition) not in intent.read_partitions:
                    return False
            ev = partition_evals.get(f.spec_id)
            if ev is None:
                ev = partition_evals[f.spec_id] = PartitionEvaluator(
                    specs[f.spec_id], schema, bound
                )
            if not (ev.eval(f.partition) and metrics.eval(f)):
                return False
            return self._holds_match(f, bound, schema, specs, name_mapping_of(base.properties))

        def describe(f: DataFile) -> str:
            return partition_path(specs[f.spec_id], base.schema(), f.partition)

        check_all(
            intent,
            concurrent,
            delta,
            may_match_read=may_match,
            describe_partition=describe,
            rows_overlap=self._rows_overlap,
        )

    def carried_deletes(self, base: TableMetadata) -> tuple[DataFile, ...]:
        """For a rewrite that knows where it moved each row (``Intent.moves``): the position
        delete files that carry the concurrent commits' position deletes (and deletion
        vectors) of its input files over to its output files. The concurrent delete files
        themselves then apply only to removed files, so the commit drops them (dangling)."""
        moves = self.intent.moves
        if moves is None:
            return ()
        sources = [
            d
            for commit in self._concurrent(base)
            for d in commit.added_files
            if carried(self.intent, d)
        ]
        key = frozenset(d.file_path for d in sources)
        found = self._carried.get(key)
        if found is None:
            found = self._carried[key] = self._write_carried(base, moves, sources)
        self._last_carried = found
        return found

    def unused_carried(self) -> list[str]:
        """Carried-over delete files and merged deletion vectors written by an attempt whose
        snapshot did not land."""
        used = {f.file_path for f in (*self._last_carried, *self._last_swap.added)}
        return [p for p in self.written if p not in used]

    def replaced_intent_files(self) -> list[str]:
        """The intent's own delete files that the landed attempt committed none of (every
        deletion vector in them was replaced by a merged or re-targeted one)."""
        dropped = self._last_swap.dropped_added
        if not dropped:
            return []
        keys: dict[str, list[tuple[str, int | None]]] = {}
        for f in self.intent.added_delete_files:
            keys.setdefault(f.file_path, []).append(f.key)
        return [path for path, found in keys.items() if all(k in dropped for k in found)]

    def merged_vectors(self, base: TableMetadata) -> DeleteSwap:
        """For an intent that writes deletion vectors (format v3), what this attempt adds and
        removes instead of some of its DVs (:class:`DeleteSwap`), when concurrent commits
        changed one of their data files:

        * its deletes (a DV of their own, or one the intent replaces): a new DV holding the
          intent's positions and the base's replaces both. A data file has one DV, holding all
          of its deletes, so two changes of different rows of one file both commit, as they do
          with position delete files. Whether the two changed a common row is for
          ``check_row_changes`` (update, merge), already run.
        * the file itself, compacted away (a ``replace``): the deleted rows are found again by
          row id in the compaction's output files (:mod:`lakecat.catalog.commit.retarget`) and
          the DVs are written for those, merged with theirs.
        """
        ours = {
            f.referenced_data_file: f
            for f in self.intent.added_delete_files
            if f.is_deletion_vector and f.referenced_data_file is not None
        }
        self._last_swap = NO_SWAP
        concurrent = self._concurrent(base)
        if not ours or not concurrent:
            return NO_SWAP
        replaced: dict[str, dict[tuple[str, int | None], DataFile]] = {}
        for d in self.intent.removed_files:
            target = named_data_file(d)
            if target in ours:
                replaced.setdefault(target, {})[d.key] = d
        ours_or_replaced = set(ours) | {k[0] for found in replaced.values() for k in found}
        if not any(
            c.removed_paths & ours_or_replaced
            or any(named_data_file(f) in ours for f in c.added_files)
            for c in concurrent
        ):
            return NO_SWAP  # nobody touched those files or their deletes: the DVs stand
        removed_by = {p: c for c in reversed(concurrent) for p in c.removed_paths}
        compacted = sorted(t for t in ours if t in removed_by)
        head = commit_parent(base, self.intent)
        current = live_deletes_naming(self.io, base, head, ours, self.manifests)
        changed = {
            target: found
            for target, found in current.items()
            if target not in removed_by and {d.key for d in found} != set(replaced.get(target, {}))
        }
        changed.update(
            (target, [])
            for target in replaced
            if target not in current and target not in removed_by
        )  # the intent's replaced DV is gone and nothing took its place
        if not changed and not compacted:
            return NO_SWAP
        key = (
            frozenset(d.key for found in changed.values() for d in found)
            | frozenset((f"data:{target}", None) for target in changed)
            | frozenset((f"compacted:{target}", None) for target in compacted)
            | frozenset((f"snapshot:{c.snapshot_id}", None) for c in concurrent if compacted)
        )
        swap = self._swaps.get(key)
        if swap is None:
            retargeted, on_outputs = (
                self._retarget(base, head, ours, replaced, compacted, removed_by, concurrent)
                if compacted
                else ([], [])
            )
            swap = self._swaps[key] = self._merge_vectors(
                base, ours, replaced, changed, compacted, current, retargeted, on_outputs
            )
        self._last_swap = swap
        return swap

    def moved_positions(self, base: TableMetadata) -> DeleteSwap:
        """For a merge-on-read change of a format v2 table (position delete files, no row
        ids) whose data files a concurrent compaction replaced: position delete files for the
        same rows in the compaction's output files, found through the row-moves record the
        compaction committed (:mod:`lakecat.catalog.commit.moves`), in place of the intent's
        own. :class:`ConcurrentDeleteRead` when the compaction left no record (a sorted one,
        Spark's, another engine's); :class:`ConcurrentRowChange` for an UPDATE or MERGE whose
        row another commit deleted meanwhile."""
        intent = self.intent
        ours: dict[str, DataFile] = {}
        for f in intent.added_delete_files:
            target = named_data_file(f)
            if target is not None and not f.is_deletion_vector:
                ours[target] = f
        concurrent = self._concurrent(base) if ours else []
        removed_by = {p: c for c in reversed(concurrent) for p in c.removed_paths}
        compacted = sorted(t for t in ours if t in removed_by)
        if not compacted:
            return NO_SWAP
        key = frozenset((f"compacted:{t}", removed_by[t].snapshot_id) for t in compacted) | {
            (f"snapshot:{c.snapshot_id}", None) for c in concurrent
        }
        swap = self._swaps.get(key)
        if swap is None:
            moved = self._follow_moves(
                {t: self._positions(ours[t], t).positions for t in compacted}, removed_by
            )
            outputs = {f.file_path: f for c in concurrent for f in c.added_files}
            if intent.kind in (OpKind.UPDATE, OpKind.MERGE):
                self._require_live(base, moved, removed_by[compacted[0]])
            added = write_position_delete_files(
                self.io,
                data_dir(base),
                [FileDeletes(outputs[p], pos) for p, pos in sorted(moved.items())],
                specs=base.specs_by_id(),
                schema=base.schema(),
                properties=base.properties,
            )
            self.written.extend(f.file_path for f in added)
            swap = self._swaps[key] = DeleteSwap(
                added=tuple(added), dropped_added=frozenset(ours[t].key for t in compacted)
            )
        self._last_swap = swap
        return swap

    def _follow_moves(
        self, positions: Mapping[str, pa.Int64Array], removed_by: Mapping[str, ConcurrentCommit]
    ) -> dict[str, pa.Int64Array]:
        """``positions`` (by data file) moved through every compaction that replaced their
        files since, in order (an output compacted again moves again)."""
        pending = dict(positions)
        done: dict[str, list[pa.Int64Array]] = {}
        while pending:
            path, found = pending.popitem()
            commit = removed_by.get(path)
            if commit is None:
                done.setdefault(path, []).append(found)
                continue
            moves = self._moves_of(commit)
            if moves is None or not moves.covers(path):
                raise ConcurrentDeleteRead(
                    f"{self.intent.kind.value}: {commit.label} removed a file this operation "
                    f"deletes rows from ({path}) and recorded no row moves to find them by "
                    "(a change of data, a sorted compaction, or another engine's). Re-run it.",
                    snapshot_id=commit.snapshot_id,
                    operation=commit.operation,
                    files=(path,),
                )
            if self.intent.kind in (OpKind.UPDATE, OpKind.MERGE):
                gone = pc.is_in(found, value_set=moves.inputs[path].deleted)
                if pc.any(gone).as_py():
                    raise _row_gone(self.intent, commit, path)
            for output, moved in moves.moved(path, found).items():
                earlier = pending.pop(output, None)
                pending[output] = moved if earlier is None else pa.concat_arrays([earlier, moved])
        return {p: pc.unique(pa.concat_arrays(chunks)) for p, chunks in done.items()}

    def _moves_of(self, commit: ConcurrentCommit) -> RowMoves | None:
        """The row-moves record a compaction named in its summary, if any and readable."""
        location = commit.summary.get(ROW_MOVES_KEY)
        if commit.operation != REPLACE or not location:
            return None
        if location not in self._moves:
            try:
                self._moves[location] = read_row_moves(self.io, location)
            except (LakecatError, OSError) as exc:
                log.warning("cannot read the row moves of %s: %s", commit.label, exc)
                self._moves[location] = None
        return self._moves[location]

    def _require_live(
        self,
        base: TableMetadata,
        moved: Mapping[str, pa.Int64Array],
        commit: ConcurrentCommit,
    ) -> None:
        """An UPDATE or MERGE whose moved rows another commit deleted in the output files
        (a lost update): :class:`ConcurrentRowChange`."""
        head = commit_parent(base, self.intent)
        theirs = live_deletes_naming(self.io, base, head, moved, self.manifests)
        for path, found in theirs.items():
            for d in found:
                deleted = self._positions(d, path).positions
                if pc.any(pc.is_in(moved[path], value_set=deleted)).as_py():
                    raise _row_gone(self.intent, commit, path)

    def _merge_vectors(
        self,
        base: TableMetadata,
        ours: Mapping[str, DataFile],
        replaced: Mapping[str, Mapping[tuple[str, int | None], DataFile]],
        changed: Mapping[str, Sequence[DataFile]],
        compacted: Sequence[str],
        current: Mapping[str, Sequence[DataFile]],
        retargeted: Sequence[VectorTarget],
        on_outputs: Sequence[DataFile],
    ) -> DeleteSwap:
        targets = list(retargeted)
        for target, found in sorted(changed.items()):
            mine = ours[target]
            chunks = [self._positions(mine, target).positions]
            chunks += [self._positions(d, target).positions for d in found]
            targets.append(
                VectorTarget(target, mine.spec_id, mine.partition, pa.concat_arrays(chunks))
            )
        added = write_deletion_vector_file(self.io, data_dir(base), targets)
        self.written.extend({f.file_path for f in added})
        live = {d.key for found in current.values() for d in found}
        gone = [*changed, *compacted]
        return DeleteSwap(
            added=tuple(added),
            dropped_added=frozenset(ours[target].key for target in gone),
            extra_removed=(
                *(
                    d
                    for target in gone
                    for d in current.get(target, ())
                    if d.key not in replaced.get(target, {})
                ),
                *on_outputs,
            ),
            dropped_removed=frozenset(
                k for target in gone for k in replaced.get(target, {}) if k not in live
            ),
        )

    def _retarget(
        self,
        base: TableMetadata,
        head: Snapshot | None,
        ours: Mapping[str, DataFile],
        replaced: Mapping[str, Mapping[tuple[str, int | None], DataFile]],
        compacted: Sequence[str],
        removed_by: Mapping[str, ConcurrentCommit],
        concurrent: Sequence[ConcurrentCommit],
    ) -> tuple[list[VectorTarget], list[DataFile]]:
        """The DVs of the compaction outputs that now hold the rows the intent deleted from
        the ``compacted`` files (see :mod:`lakecat.catalog.commit.retarget`), and the outputs'
        DVs in the base they replace. :class:`ConcurrentDeleteRead` when the rows cannot be
        found by row id (a file without row ids, or one removed by a change of data)."""
        intent = self.intent
        not_compaction = [t for t in compacted if removed_by[t].operation != REPLACE]

        def refuse(files: Sequence[str], why: str) -> ConcurrentDeleteRead:
            commit = removed_by[files[0]]
            return ConcurrentDeleteRead(
                f"{intent.kind.value}: {commit.label} removed {len(files)} file(s) this "
                f"operation deletes rows from (e.g. {files[0]}), and {why}. Re-run it.",
                snapshot_id=commit.snapshot_id,
                operation=commit.operation,
                files=tuple(files),
            )

        if not_compaction:
            raise refuse(not_compaction, "that commit changed data")
        start = (
            base.snapshot_by_id(intent.starting_snapshot_id)
            if intent.starting_snapshot_id is not None
            and base.has_snapshot(intent.starting_snapshot_id)
            else None
        )
        originals = self._data_files(base, start, set(compacted))
        outputs = [
            f
            for c in concurrent
            if c.operation == REPLACE
            for f in c.added_files
            if f.content is Content.DATA and f.file_path not in removed_by
        ]
        try:
            deleted = []
            for target in compacted:
                rows = row_versions(self.io, *originals[target]) if target in originals else None
                if rows is None:
                    raise refuse([target], "its rows have no row lineage to find them by")
                mine = self._positions(ours[target], target).positions
                before = [
                    self._positions(d, target).positions for d in replaced.get(target, {}).values()
                ]
                if before:
                    earlier = pa.concat_arrays(before)
                    mine = pc.filter(mine, pc.invert(pc.is_in(mine, value_set=earlier)))
                deleted.append((rows, mine))
            output_rows = []
            for f in outputs:
                rows = row_versions(self.io, f, None)  # a rewrite copies both columns
                if rows is None:
                    raise refuse(list(compacted), "its output has no row lineage")
                output_rows.append((f.file_path, rows))
        except (LakecatError, OSError, pa.ArrowException) as exc:
            if isinstance(exc, ConcurrentDeleteRead):
                raise
            raise refuse(list(compacted), f"its files cannot be read ({exc})") from exc
        found = retarget(deleted, output_rows)
        if len(found.missing) and intent.kind in (OpKind.UPDATE, OpKind.MERGE):
            commit = removed_by[compacted[0]]
            raise ConcurrentRowChange(
                f"{intent.kind.value}: {len(found.missing)} row(s) this operation changed are "
                f"not in the files {commit.label} wrote as this operation read them: a "
                "concurrent change deleted or updated them. Re-run the operation on the new "
                "state.",
                snapshot_id=commit.snapshot_id,
                operation=commit.operation,
                files=tuple(compacted),
            )
        by_path = {f.file_path: f for f in outputs}
        theirs = live_deletes_naming(self.io, base, head, found.positions, self.manifests)
        targets = []
        for path, positions in sorted(found.positions.items()):
            f = by_path[path]
            deleted = [self._positions(d, path).positions for d in theirs.get(path, ())]
            if deleted and intent.kind in (OpKind.UPDATE, OpKind.MERGE):
                self._require_not_deleted(positions, deleted, theirs[path], concurrent, path)
            targets.append(
                VectorTarget(path, f.spec_id, f.partition, pa.concat_arrays([positions, *deleted]))
            )
        return targets, [d for found_ in theirs.values() for d in found_]

    def _require_not_deleted(
        self,
        positions: pa.Int64Array,
        deleted: Sequence[pa.Int64Array],
        deletes: Sequence[DataFile],
        concurrent: Sequence[ConcurrentCommit],
        path: str,
    ) -> None:
        """An UPDATE or MERGE whose rows, found again in a compaction's output ``path``, a
        later concurrent commit deleted there (a lost update: the change would bring back a
        new version of a deleted row): :class:`ConcurrentRowChange`."""
        gone = pc.sum(pc.is_in(positions, value_set=pa.concat_arrays(deleted))).as_py() or 0
        if not gone:
            return
        keys = {d.key for d in deletes}
        deleter = next(
            (c for c in reversed(concurrent) for f in c.added_files if f.key in keys), None
        )
        who = deleter.label if deleter is not None else "a concurrent commit"
        raise ConcurrentRowChange(
            f"{self.intent.kind.value}: {who} deleted {gone} row(s) this operation changed, "
            f"after a compaction moved them to {path}. Re-run the operation on the new state.",
            snapshot_id=deleter.snapshot_id if deleter is not None else None,
            operation=deleter.operation if deleter is not None else None,
            files=(path,),
        )

    def _data_files(
        self, base: TableMetadata, snapshot: Snapshot | None, paths: set[str]
    ) -> dict[str, tuple[DataFile, int | None]]:
        """The data files of ``snapshot`` at ``paths`` (as it listed them: row ids inherited),
        each with its data sequence number."""
        if snapshot is None:
            return {}
        out: dict[str, tuple[DataFile, int | None]] = {}
        specs = base.specs_by_id()
        listing = self.manifests.manifest_list(self.io, snapshot.manifest_list)
        for manifest in listing.manifests:
            if manifest.content is not ManifestContent.DATA:
                continue
            for e in self.manifests.read(self.io, manifest, specs=specs, schema=base.schema()):
                if e.status is not Status.DELETED and e.data_file.file_path in paths:
                    out[e.data_file.file_path] = (e.data_file, e.sequence_number)
        return out

    def _write_carried(
        self, base: TableMetadata, moves: RowMoves, sources: Sequence[DataFile]
    ) -> tuple[DataFile, ...]:
        by_output: dict[str, list[pa.Int64Array]] = {}
        for d in sources:
            source_path = named_data_file(d)
            assert source_path is not None  # carried() checked it
            deleted = self._positions(d, source_path).positions
            for output, positions in moves.moved(source_path, deleted).items():
                by_output.setdefault(output, []).append(positions)
        outputs = {f.file_path: f for f in self.intent.added_files}
        if base.format_version >= 3:  # v3 takes no new position delete files: DVs
            vectors = [
                VectorTarget(
                    path, outputs[path].spec_id, outputs[path].partition, pa.concat_arrays(chunks)
                )
                for path, chunks in sorted(by_output.items())
            ]
            dvs = write_deletion_vector_file(self.io, data_dir(base), vectors)
            self.written.extend({f.file_path for f in dvs})
            return tuple(dvs)
        targets = [
            FileDeletes(outputs[path], pa.concat_arrays(chunks))
            for path, chunks in sorted(by_output.items())
        ]
        written = write_position_delete_files(
            self.io,
            data_dir(base),
            targets,
            specs=base.specs_by_id(),
            schema=base.schema(),
            properties=base.properties,
            kind="carried-deletes",
        )
        self.written.extend(f.file_path for f in written)
        return tuple(written)

    def _holds_match(
        self,
        f: DataFile,
        bound: BoundExpression,
        schema: Schema,
        specs: Mapping[int, PartitionSpec],
        name_mapping: NameMapping | None,
    ) -> bool:
        """Whether a concurrently added data file that its partition and metrics say may
        match the operation's read filter really holds a matching row: its filter columns are
        read (files up to ``_EXACT_MATCH_MAX_ROWS`` rows; larger ones, and any file that
        cannot be read, count as matching). So two operations on interleaved keys, whose new
        files' bounds overlap, do not conflict unless a row really matches."""
        if isinstance(bound, AlwaysTrue) or f.content is not Content.DATA:
            return True
        if f.record_count > _EXACT_MATCH_MAX_ROWS:
            return True
        found = self._matches.get(f.file_path)
        if found is None:
            columns = {schema.top_level_id(i) for i in referenced_field_ids(bound)}
            projected = Schema(tuple(fld for fld in schema.fields if fld.field_id in columns))
            try:
                rows = read_data_file(
                    self.io,
                    f,
                    projected=projected,
                    row_filter=to_arrow_filter(bound),
                    spec=specs.get(f.spec_id),
                    name_mapping=name_mapping,
                )
                found = rows.num_rows > 0
            except (LakecatError, OSError, ValueError, pa.ArrowException):
                found = True
            self._matches[f.file_path] = found
        return found

    def _rows_overlap(self, theirs: DataFile, ours: DataFile, data_file_path: str) -> bool:
        """Whether two position delete files / deletion vectors delete a common row of one
        data file (each read once per commit), other than rows deleted before this operation
        started: a deletion vector (v3) holds those too, and the intent replaces the deletes
        that held them."""
        a = self._positions(theirs, data_file_path)
        b = self._positions(ours, data_file_path)
        if not len(a) or not len(b):
            return False
        common = pc.filter(a.positions, pc.is_in(a.positions, value_set=b.positions))
        before = [
            self._positions(d, data_file_path).positions
            for d in self.intent.removed_files
            if named_data_file(d) == data_file_path
        ]
        if before and len(common):
            earlier = pa.concat_arrays(before)
            common = pc.filter(common, pc.invert(pc.is_in(common, value_set=earlier)))
        return len(common) > 0

    def _positions(self, delete_file: DataFile, data_file_path: str) -> PositionIndex:
        key = (delete_file.file_path, data_file_path)
        found = self._deleted.get(key)
        if found is None:
            found = self._deleted[key] = deleted_positions(self.io, delete_file, data_file_path)
        return found

    def _concurrent(self, base: TableMetadata) -> list[ConcurrentCommit]:
        head = commit_parent(base, self.intent)
        out: list[ConcurrentCommit] = []
        for snap in base.ancestors(head.snapshot_id if head else None):
            if snap.snapshot_id == self.intent.starting_snapshot_id:
                break
            found = self._seen.get(snap.snapshot_id)
            if found is None:
                found = self._read(base, snap.snapshot_id)
                self._seen[snap.snapshot_id] = found
            out.append(found)
        return out

    def _read(self, base: TableMetadata, snapshot_id: int) -> ConcurrentCommit:
        snap = base.snapshot_by_id(snapshot_id)
        added: list[DataFile] = []
        removed: set[str] = set()
        specs = base.specs_by_id()
        for manifest in read_manifest_list(self.io, snap.manifest_list):
            if manifest.added_snapshot_id != snapshot_id:
                continue
            if not (manifest.has_added_files or manifest.has_deleted_files):
                continue
            for e in self.manifests.read(self.io, manifest, specs=specs, schema=base.schema()):
                if e.snapshot_id != snapshot_id:
                    continue
                if e.status is Status.ADDED:
                    added.append(e.data_file)
                elif e.status is Status.DELETED:
                    removed.add(e.data_file.file_path)
        return ConcurrentCommit(
            snapshot_id, snap.operation, snap.summary, tuple(added), frozenset(removed)
        )


def _row_gone(intent: Intent, commit: ConcurrentCommit, path: str) -> ConcurrentRowChange:
    return ConcurrentRowChange(
        f"{intent.kind.value}: a row this operation changed was deleted by a concurrent commit "
        f"before or after {commit.label} moved it (from {path}). Re-run the operation on the "
        "new state.",
        snapshot_id=commit.snapshot_id,
        operation=commit.operation,
        files=(path,),
    )


def metadata_delta(start: TableMetadata, base: TableMetadata) -> MetadataDelta:
    if start is base:
        return MetadataDelta()
    keys = set(start.properties) | set(base.properties)
    changed = tuple(sorted(k for k in keys if start.properties.get(k) != base.properties.get(k)))
    return MetadataDelta(
        format_upgraded=start.format_version != base.format_version,
        schema_changed=start.current_schema_id != base.current_schema_id,
        spec_changed=start.default_spec_id != base.default_spec_id,
        sort_order_changed=start.default_sort_order_id != base.default_sort_order_id,
        changed_properties=changed,
    )


def require_row_lineage(base: TableMetadata, intent: Intent) -> None:
    """:class:`UnsupportedFeature` for a rewrite that would drop row lineage: on a format v3
    table, rows moved to new data files must keep their ``_row_id`` and
    ``_last_updated_sequence_number`` (spec, "Row Lineage"), and only writers that read and
    write them say so (``Intent.keeps_row_lineage``)."""
    if base.format_version >= 3 and intent.copies_rows and not intent.keeps_row_lineage:
        raise UnsupportedFeature(
            f"{intent.kind.value}: this writer moves rows to new data files without their row "
            f"lineage, which a format version {base.format_version} table must keep; use "
            "lakecat's Python API (or merge-on-read, which moves no rows) for this change",
            feature="row lineage in this rewrite",
        )


def _already_committed(intent: Intent, base: TableMetadata) -> int | None:
    if intent.app_id is None:
        return None
    head = commit_parent(base, intent)
    history = base.ancestors(head.snapshot_id if head else None)
    return check_transaction(intent, app_versions((s.snapshot_id, s.summary) for s in history))


# ---- the swap and its outcomes ------------------------------------------------------------
class _NotLanded(Exception):
    """The swap's outcome was unknown, and the catalog, read again, shows it did not land."""


def _swap(ops: TableOperations, expected: str, new: str, snapshot_id: int | None) -> None:
    """The swap with an unknown outcome resolved: returns when it landed; raises what the
    store raised for a definite failure, :class:`_NotLanded`, or ``CommitStateUnknown`` when
    the catalog cannot be read back."""
    try:
        ops.swap(expected=expected, new=new)
        return
    except (CommitFailed, CatalogUnavailable) as exc:
        log.info("commit lost the swap", extra={"table": ops.name, "reason": str(exc)})
        raise
    except CommitStateUnknown as exc:
        log.warning("commit state unknown; checking the pointer", extra={"table": ops.name})
        unknown = exc
    try:
        current, location = ops.refresh()
    except LakecatError as exc:
        raise CommitStateUnknown(
            f"{ops.name}: the catalog failed after the swap was sent and cannot be read "
            f"back ({exc}); the commit may or may not have landed. Check whether "
            f"snapshot {snapshot_id} is in the table before re-running"
        ) from exc
    if location == new:
        return
    if snapshot_id is not None and current.has_snapshot(snapshot_id):
        return
    raise _NotLanded(str(unknown)) from unknown


# ---- cleanup ------------------------------------------------------------------------------
def intent_files(intent: Intent) -> list[str]:
    """The files the operation wrote, which go when it does not commit (not imported ones)."""
    if intent.imports_files:
        return []
    return [f.file_path for f in intent.added_files]


def delete_quietly(io: FileIO, locations: Sequence[str]) -> None:
    """Delete files a failed or finished operation no longer needs; best effort (orphan
    removal collects what is left)."""
    for location in locations:
        try:
            io.delete(location)
        except StorageError as exc:  # best effort: orphan removal collects what is left
            log.warning("could not delete %s: %s", location, exc)


def _after_commit(
    io: FileIO,
    base: TableMetadata,
    base_location: str,
    new: TableMetadata,
    unused_manifests: Sequence[str],
) -> None:
    """Delete what a landed commit superseded (run as a best-effort step: see
    :meth:`Landing.after`)."""
    delete_quietly(io, unused_manifests)
    _prune_metadata_files(io, base, base_location, new)


def _prune_metadata_files(
    io: FileIO, base: TableMetadata, base_location: str, new: TableMetadata
) -> None:
    """Delete metadata files that fell off the metadata log, when the table asks for it."""
    if not P.get_bool(
        new.properties,
        P.METADATA_DELETE_AFTER_COMMIT_ENABLED,
        P.METADATA_DELETE_AFTER_COMMIT_ENABLED_DEFAULT,
    ):
        return
    before = {e.metadata_file for e in base.metadata_log} | {base_location}
    after = {e.metadata_file for e in new.metadata_log}
    delete_quietly(io, sorted(before - after))


def _log_attempt(
    ops: TableOperations, intent: Intent, base: TableMetadata, attempt: int, clock: RetryClock
) -> None:
    log.debug(
        "commit attempt",
        extra={
            "table": ops.name,
            "operation": intent.kind.value,
            "snapshot_id": intent.snapshot_id,
            "base_snapshot_id": base.current_snapshot_id,
            "attempt": attempt,
            "wait_ms": int(clock.waited_ms),
        },
    )
