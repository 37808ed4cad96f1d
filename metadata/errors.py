"""The one exception tree of lakecat.

Every error lakecat raises on purpose derives from :class:`LakecatError`. Third-party errors
(SQLAlchemy, pyarrow, fastavro, OS) are translated where they occur, at the boundary that
calls the library, so callers never need to catch a library's own exception types.

::

    LakecatError
    ├── ValidationError            bad input; nothing was changed
    │   ├── InvalidIdentifier      empty parts, path separators, "..", control characters
    │   ├── SchemaMismatch         data whose schema does not fit the table's
    │   ├── NullInRequiredColumn   nulls written into a required column
    │   ├── UnknownColumn          a column name a filter, projection or change refers to
    │   │   └── AmbiguousColumn    a full name two fields share (a schema another engine wrote)
    │   └── InvalidUpdate          a metadata change that the spec does not allow
    ├── NotFound
    │   ├── NoSuchNamespace
    │   ├── NoSuchTable
    │   ├── NoSuchSnapshot         unknown snapshot id, or a timestamp before the first snapshot
    │   ├── NoSuchRef              unknown branch or tag
    │   └── NoSuchView
    ├── AlreadyExists
    │   ├── NamespaceAlreadyExists
    │   ├── TableAlreadyExists
    │   └── ViewAlreadyExists      a view or a table has the name
    ├── NamespaceNotEmpty
    ├── TableKeptChanging          a maintenance job re-planned as often as it may; no change
    ├── CorruptMetadata            a metadata, manifest or data file unreadable per the spec
    ├── UnsupportedFeature         a table feature lakecat cannot read or write yet (refused,
    │                              never read or written wrongly)
    ├── StorageError               the file-IO seam failed (OS / object-store error)
    │   ├── StorageUnreachable     the object store's endpoint did not answer (in time)
    │   ├── StorageAccessDenied    the object store refused the credentials, or their rights
    │   └── NoSuchBucket           the bucket (container) of a location does not exist
    ├── CatalogUnavailable         the catalog database cannot be reached or answered an error
    │   └── CatalogRefused         it answered: the statement was refused (never retried)
    │       ├── CatalogReadOnly          the database (file, connection or server) takes no writes
    │       └── CatalogPermissionDenied  the database user may not do this
    └── CommitError
        ├── CommitFailed           the change definitely did not land (lost compare-and-swap)
        │   └── RequirementFailed  a requirement record did not hold against the base
        ├── CommitStateUnknown     the change may or may not have landed
        ├── RetriesExhausted       lost the swap on every attempt the retry policy allowed
        ├── TooManyFailedCommits   a compaction lost more of its commits than allowed (the
        │                          others landed and stay)
        └── CommitConflict         a concurrent commit conflicts with this one (typed below)
            ├── ConcurrentAppend
            ├── ConcurrentDeleteRead
            ├── ConcurrentDeleteDelete
            │   └── ConcurrentRowChange    an update/merge and a concurrent change of one row
            ├── MetadataChanged
            ├── ProtocolChanged
            │   └── ConcurrentCreate   (also a TableAlreadyExists)
            └── ConcurrentTransaction
"""

from __future__ import annotations


class LakecatError(Exception):
    """Root of every error lakecat raises on purpose."""


class ValidationError(LakecatError, ValueError):
    """Bad input. Raised before anything is written; the table is unchanged."""


class InvalidIdentifier(ValidationError):
    """A namespace or table name that lakecat refuses (empty, path separators, '..')."""


class SchemaMismatch(ValidationError):
    """Data whose schema does not fit the table's schema."""


class NullInRequiredColumn(ValidationError):
    """Null values written into a column the schema declares required."""


class UnknownColumn(ValidationError, KeyError):
    """A column name that does not exist in the schema it is resolved against."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class AmbiguousColumn(UnknownColumn):
    """A full column name that more than one field of the schema has (Iceberg forbids it;
    lakecat never creates such a schema, but may load one another engine wrote)."""


class InvalidUpdate(ValidationError):
    """A metadata change the Iceberg spec does not allow (e.g. narrowing a type)."""


class NotFound(LakecatError, LookupError):
    """Something that was asked for does not exist."""


class NoSuchNamespace(NotFound):
    pass


class NoSuchTable(NotFound):
    pass


class NoSuchSnapshot(NotFound):
    pass


class NoSuchRef(NotFound):
    pass


class NoSuchView(NotFound):
    pass


class AlreadyExists(LakecatError):
    pass


class NamespaceAlreadyExists(AlreadyExists):
    pass


class TableAlreadyExists(AlreadyExists):
    pass


class ViewAlreadyExists(AlreadyExists):
    """A view cannot be created: a view or a table has the name."""


class NamespaceNotEmpty(LakecatError):
    pass


class TableKeptChanging(LakecatError):
    """A maintenance job found a file it read deleted by a concurrent commit on every re-plan it
    allows. The job had no effect (it committed and deleted nothing); run it again later."""


class CorruptMetadata(LakecatError):
    """A metadata.json, manifest list, manifest or data file that cannot be read per the spec."""


class UnsupportedFeature(LakecatError):
    """The table uses something lakecat cannot read or write yet (``feature`` names it).

    Raised before anything is read or written: lakecat refuses instead of returning wrong rows
    or writing a table other engines would read differently.
    """

    def __init__(self, message: str, *, feature: str = "") -> None:
        super().__init__(message)
        self.feature = feature


class ResultTooLarge(LakecatError, MemoryError):
    """Materialising a scan would need more memory than the process can take; nothing is
    wrong with the table. Stream it instead (``to_batches``, ``to_arrow_batch_reader``), or
    narrow the scan (columns, a filter, ``limit``)."""

    def __init__(self, message: str, *, read_bytes: int, budget_bytes: int) -> None:
        super().__init__(message)
        self.read_bytes = read_bytes
        self.budget_bytes = budget_bytes


class StorageError(LakecatError, OSError):
    """The file-IO seam failed."""


class StorageUnreachable(StorageError):
    """The object store could not be reached: no answer at its endpoint (refused, unknown
    host, timed out). Check the endpoint property (``s3.endpoint``, ...) and the network."""


class StorageAccessDenied(StorageError):
    """The object store answered and refused: wrong credentials (access key, secret, token),
    or credentials without permission for the bucket or key."""


class NoSuchBucket(StorageError):
    """The bucket (or container) a location names does not exist on the object store."""


class CatalogUnavailable(LakecatError):
    """The catalog database could not be reached or answered with an error.

    Nothing was committed. The commit loop retries an unreachable catalog a bounded number of
    times (``commit.retry.num-retries``), never a :class:`CatalogRefused`.
    """


class CatalogRefused(CatalogUnavailable):
    """The database was reached and refused the statement with an error (rolled back).

    Trying again would meet the same refusal, so no commit retries it: the message names the
    database's own reason.
    """


class CatalogReadOnly(CatalogRefused):
    """The catalog database takes no writes: a read-only file, URL (``mode=ro``), connection
    or server (a PostgreSQL standby, ``default_transaction_read_only``)."""


class CatalogPermissionDenied(CatalogRefused):
    """The database user may not do this (no privilege on the catalog tables, bad password)."""


class CommitError(LakecatError):
    """A commit did not complete."""


class CommitFailed(CommitError):
    """The commit definitely did not land: the compare-and-swap found another pointer.

    Safe to retry after refreshing; the files this attempt wrote may be deleted.
    """


class RequirementFailed(CommitFailed):
    """A requirement record (e.g. 'the current snapshot is X') did not hold against the base."""


class CommitStateUnknown(CommitError):
    """The commit may or may not have landed (e.g. the connection dropped after the UPDATE).

    Nothing must be deleted: the files may already be part of the table.
    """


class RetriesExhausted(CommitFailed):
    """Every attempt that the table's retry policy allows lost the compare-and-swap."""


class TooManyFailedCommits(CommitError):
    """A compaction with partial progress lost more of its commits than it may (Iceberg's
    ``partial-progress.max-failed-commits``). The commits that landed stay; ``result`` is
    what the job did (a :class:`~lakecat.catalog.maintenance.CompactionResult`)."""

    def __init__(self, message: str, *, result: object = None) -> None:
        super().__init__(message)
        self.result = result


class CommitConflict(CommitError):
    """A concurrent commit conflicts with this operation; this attempt's files were deleted.

    Attributes name the concurrent snapshot and what overlapped, so that the message can say
    how to avoid the conflict.
    """

    def __init__(
        self,
        message: str,
        *,
        snapshot_id: int | None = None,
        operation: str | None = None,
        partitions: tuple[str, ...] = (),
        files: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.snapshot_id = snapshot_id
        self.operation = operation
        self.partitions = partitions
        self.files = files


class ConcurrentAppend(CommitConflict):
    """A concurrent commit added files where this operation read."""


class ConcurrentDeleteRead(CommitConflict):
    """A concurrent commit removed a file this operation read."""


class ConcurrentDeleteDelete(CommitConflict):
    """A concurrent commit removed a file this operation also removes."""


class ConcurrentRowChange(ConcurrentDeleteDelete):
    """A concurrent commit deleted or changed a row this update or merge changes too."""


class MetadataChanged(CommitConflict):
    """A concurrent commit changed the schema, partitioning, sort order or properties."""


class ProtocolChanged(CommitConflict):
    """A concurrent format upgrade, or a concurrent create/replace of the same table."""


class ConcurrentCreate(ProtocolChanged, TableAlreadyExists):
    """Another writer created the same table between this writer's check and its insert."""


class ConcurrentTransaction(CommitConflict):
    """The same (application id, version) was already committed."""


class BranchRemoved(CommitConflict):
    """A concurrent commit removed the branch this operation read and commits to."""
