"""The file-IO seam: the only place in ``lakecat.metadata`` that touches storage.

Locations are URIs (``file:///abs/path``, ``s3://bucket/key``) or absolute local paths. Local
files go through the OS directly (fast, and exclusive creation is atomic); any other scheme goes
through a pyarrow filesystem configured by the catalog's storage properties
(:mod:`lakecat.metadata.io.storage`). OS and pyarrow errors are translated to
:class:`StorageError` here (an unreachable endpoint, refused credentials and a missing bucket
to its subclasses), and a missing file to :class:`FileNotFoundStorageError`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import IO, Any
from urllib.parse import unquote, urlparse

import pyarrow.fs as pafs

from lakecat.metadata.errors import StorageError
from lakecat.metadata.io.s3_requests import S3Client, environment, s3_client
from lakecat.metadata.io.storage import (
    S3_SCHEMES,
    arrow_filesystem,
    check_storage_properties,
    parse_location,
    redacted,
    storage_error,
)


class FileNotFoundStorageError(StorageError, FileNotFoundError):
    """The file does not exist."""


class FileExistsStorageError(StorageError, FileExistsError):
    """Exclusive creation found a file already there."""


@dataclass(frozen=True, slots=True)
class FileInfo:
    location: str
    size: int
    mtime_ms: int


class FileIO:
    """Storage operations lakecat needs. Subclass to inject faults in tests."""

    def read(self, location: str) -> bytes:
        raise NotImplementedError

    def write(self, location: str, data: bytes, *, exclusive: bool = False) -> None:
        """Write a whole file. ``exclusive``: fail if the file exists (metadata files)."""
        raise NotImplementedError

    def open_input(self, location: str) -> Any:
        """A binary file-like object or a pyarrow NativeFile for reading."""
        raise NotImplementedError

    def open_output(self, location: str) -> IO[bytes]:
        raise NotImplementedError

    def delete(self, location: str) -> None:
        """Delete a file; a file that is already gone is not an error."""
        raise NotImplementedError

    def exists(self, location: str) -> bool:
        raise NotImplementedError

    def list_prefix(self, location: str) -> Iterator[FileInfo]:
        """Every file below a folder location, recursively."""
        raise NotImplementedError

    def arrow_filesystem(self, location: str) -> tuple[pafs.FileSystem, str]:
        """A pyarrow filesystem and the path in it, for pyarrow readers and writers."""
        raise NotImplementedError


_O_BINARY = getattr(os, "O_BINARY", 0)  # Windows only


def _read_all(fd: int) -> bytes:
    """Every byte of the open file ``fd``, from where it stands: one read of its size (and
    the read that finds its end), more if it grew meanwhile or the OS reads less at once."""
    chunks = []
    want = os.fstat(fd).st_size + 1
    while chunk := os.read(fd, want):
        chunks.append(chunk)
        want = max(want - len(chunk), 1 << 16)
    return b"".join(chunks)


# characters urlparse gives a meaning to (or drops) in a file: URI's path
_PLAIN = frozenset("?#;\t\r\n")


def local_path(location: str) -> str | None:
    """The OS path of a local location, or ``None`` for a remote one.

    A ``file:`` URI's path is taken literally, as pyiceberg and Hadoop take it: partition
    folders are named with URL-escaped values (``region=a%2Fb``), and the file on disk must
    carry that very name for other engines to find it."""
    if location.startswith("file:"):
        if location.startswith("file:///") and _PLAIN.isdisjoint(location):
            return location[7:]  # what urlparse returns for it, without its cost per file
        return urlparse(location).path
    if "://" not in location:
        return location
    return None


def to_uri(path: str) -> str:
    """A local absolute path as a ``file://`` URI."""
    if "://" in path or path.startswith("file:"):
        return path
    return "file://" + os.path.abspath(path)


def join(location: str, *parts: str) -> str:
    out = location.rstrip("/")
    for p in parts:
        out += "/" + p.strip("/")
    return out


class LocalFileIO(FileIO):
    """Local files through the OS. Directories are created on demand."""

    def _path(self, location: str) -> str:
        path = local_path(location)
        if path is None:
            raise StorageError(f"not a local location: {location}")
        if "%" in path and location.startswith("file:") and not os.path.lexists(path):
            # lakecat before 2026-11-21 unescaped file: URIs, so the files of partitions with
            # escaped values were written under the unescaped name: still find those
            legacy = unquote(path)
            if legacy != path and os.path.lexists(legacy):
                return legacy
        return path

    def read(self, location: str) -> bytes:
        path = self._path(location)
        try:
            # os calls, not a Python file object: for the many small files of a scan, opening
            # one cost as much as reading it
            fd = os.open(path, os.O_RDONLY | _O_BINARY)
            try:
                return _read_all(fd)
            finally:
                os.close(fd)
        except FileNotFoundError as exc:
            raise FileNotFoundStorageError(f"file not found: {location}") from exc
        except OSError as exc:
            raise StorageError(f"cannot read {location}: {exc}") from exc

    def write(self, location: str, data: bytes, *, exclusive: bool = False) -> None:
        path = self._path(location)
        try:
            if exclusive:
                _create(path, data)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
        except FileExistsError as exc:
            raise FileExistsStorageError(f"file already exists: {location}") from exc
        except OSError as exc:
            raise StorageError(f"cannot write {location}: {exc}") from exc

    def open_input(self, location: str) -> Any:
        path = self._path(location)
        try:
            return open(path, "rb")
        except FileNotFoundError as exc:
            raise FileNotFoundStorageError(f"file not found: {location}") from exc
        except OSError as exc:
            raise StorageError(f"cannot open {location}: {exc}") from exc

    def open_output(self, location: str) -> IO[bytes]:
        path = self._path(location)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return open(path, "xb")
        except OSError as exc:
            raise StorageError(f"cannot create {location}: {exc}") from exc

    def delete(self, location: str) -> None:
        try:
            os.remove(self._path(location))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot delete {location}: {exc}") from exc

    def exists(self, location: str) -> bool:
        return os.path.exists(self._path(location))

    def list_prefix(self, location: str) -> Iterator[FileInfo]:
        root = self._path(location)
        prefix_is_uri = location.startswith("file:")
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                full = os.path.join(dirpath, name)
                try:
                    st = os.stat(full)
                except FileNotFoundError:
                    continue
                loc = to_uri(full) if prefix_is_uri else full
                yield FileInfo(loc, st.st_size, int(st.st_mtime * 1000))

    def arrow_filesystem(self, location: str) -> tuple[pafs.FileSystem, str]:
        return pafs.LocalFileSystem(), self._path(location)


class ArrowFileIO(FileIO):
    """Any filesystem pyarrow supports (s3://, gs://, abfs://, hdfs://), configured by the
    catalog's storage ``properties`` (pyiceberg's names: ``s3.endpoint``,
    ``s3.access-key-id``, ...; see :mod:`lakecat.metadata.io.storage`).

    One pyarrow filesystem per (scheme, bucket), made on first use and kept by this FileIO
    (its properties are the options), not one per call. Failures raise :class:`StorageError`
    or, for an unreachable endpoint, refused credentials or a missing bucket,
    :class:`StorageUnreachable`, :class:`StorageAccessDenied`, :class:`NoSuchBucket`. Pickles
    as its properties (for Spark executors); its repr shows no credential.
    """

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        self.properties: Mapping[str, str] = MappingProxyType(
            check_storage_properties(properties or {})
        )
        self._filesystems: dict[tuple[str, str], pafs.FileSystem] = {}
        self._s3: list[S3Client | None] = []  # made on the first S3 delete
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ArrowFileIO({redacted(self.properties)!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"properties": dict(self.properties)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["properties"])  # type: ignore[misc]

    def arrow_filesystem(self, location: str) -> tuple[pafs.FileSystem, str]:
        where = parse_location(location)
        key = (where.scheme, where.bucket)
        fs = self._filesystems.get(key)
        if fs is None:
            with self._lock:
                fs = self._filesystems.get(key)
                if fs is None:
                    fs = arrow_filesystem(where, self.properties, location)
                    self._filesystems[key] = fs
        return fs, where.path

    def _error(self, exc: OSError, action: str, location: str) -> StorageError:
        return storage_error(exc, action=action, location=location, properties=self.properties)

    def read(self, location: str) -> bytes:
        fs, path = self.arrow_filesystem(location)
        try:
            with fs.open_input_stream(path) as f:
                return bytes(f.read())
        except FileNotFoundError as exc:
            raise FileNotFoundStorageError(f"file not found: {location}") from exc
        except OSError as exc:
            raise self._error(exc, "read", location) from exc

    def write(self, location: str, data: bytes, *, exclusive: bool = False) -> None:
        fs, path = self.arrow_filesystem(location)
        try:
            if exclusive and fs.get_file_info(path).type != pafs.FileType.NotFound:
                raise FileExistsStorageError(f"file already exists: {location}")
            with fs.open_output_stream(path) as f:
                f.write(data)
        except OSError as exc:
            if isinstance(exc, StorageError):
                raise
            raise self._error(exc, "write", location) from exc

    def open_input(self, location: str) -> Any:
        fs, path = self.arrow_filesystem(location)
        try:
            return fs.open_input_file(path)
        except FileNotFoundError as exc:
            raise FileNotFoundStorageError(f"file not found: {location}") from exc
        except OSError as exc:
            raise self._error(exc, "open", location) from exc

    def open_output(self, location: str) -> IO[bytes]:
        fs, path = self.arrow_filesystem(location)
        try:
            return fs.open_output_stream(path)  # type: ignore[no-any-return]
        except OSError as exc:
            raise self._error(exc, "create", location) from exc

    def delete(self, location: str) -> None:
        fs, path = self.arrow_filesystem(location)
        where = parse_location(location)
        client = self._s3_client() if where.scheme in S3_SCHEMES else None
        if client is not None:  # one DELETE: pyarrow's would leave a folder marker behind
            bucket, _, key = path.partition("/")
            client.delete(bucket, key, location=location)
            return
        try:
            fs.delete_file(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise self._error(exc, "delete", location) from exc

    def _s3_client(self) -> S3Client | None:
        if not self._s3:
            with self._lock:
                if not self._s3:
                    self._s3.append(s3_client(self.properties, environment()))
        return self._s3[0]

    def exists(self, location: str) -> bool:
        fs, path = self.arrow_filesystem(location)
        try:
            return bool(fs.get_file_info(path).type != pafs.FileType.NotFound)
        except OSError as exc:
            raise self._error(exc, "check", location) from exc

    def list_prefix(self, location: str) -> Iterator[FileInfo]:
        fs, path = self.arrow_filesystem(location)
        scheme = location.split("://", 1)[0]
        selector = pafs.FileSelector(path, recursive=True, allow_not_found=True)
        try:
            infos = fs.get_file_info(selector)
        except OSError as exc:
            raise self._error(exc, "list", location) from exc
        for info in infos:
            if info.type == pafs.FileType.File:
                mtime = int(info.mtime.timestamp() * 1000) if info.mtime else 0
                yield FileInfo(f"{scheme}://{info.path}", info.size or 0, mtime)


@contextlib.contextmanager
def deleted_on_error(io: FileIO) -> Iterator[list[str]]:
    """A list for the locations a block writes: if the block raises, they are deleted before
    the error propagates (a failed write leaves no file behind)."""
    written: list[str] = []
    try:
        yield written
    except BaseException:
        for location in written:
            io.delete(location)
        raise


def file_io_for(location: str, properties: Mapping[str, str] | None = None) -> FileIO:
    """The FileIO that serves a location; ``properties``: the catalog's storage properties,
    for object stores (:mod:`lakecat.metadata.io.storage`)."""
    if local_path(location) is not None:
        check_storage_properties(properties or {})  # a typo is reported on every warehouse
        return LocalFileIO()
    return ArrowFileIO(properties)


class RoutingFileIO(FileIO):
    """Each location through the FileIO that serves it (:func:`file_io_for`): for a catalog
    without a warehouse, whose tables may live on any storage."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        self._local = LocalFileIO()
        self._arrow = ArrowFileIO(properties)

    def __repr__(self) -> str:
        return f"RoutingFileIO({redacted(self._arrow.properties)!r})"

    def _for(self, location: str) -> FileIO:
        return self._local if local_path(location) is not None else self._arrow

    def read(self, location: str) -> bytes:
        return self._for(location).read(location)

    def write(self, location: str, data: bytes, *, exclusive: bool = False) -> None:
        self._for(location).write(location, data, exclusive=exclusive)

    def open_input(self, location: str) -> Any:
        return self._for(location).open_input(location)

    def open_output(self, location: str) -> IO[bytes]:
        return self._for(location).open_output(location)

    def delete(self, location: str) -> None:
        self._for(location).delete(location)

    def exists(self, location: str) -> bool:
        return self._for(location).exists(location)

    def list_prefix(self, location: str) -> Iterator[FileInfo]:
        return self._for(location).list_prefix(location)

    def arrow_filesystem(self, location: str) -> tuple[pafs.FileSystem, str]:
        return self._for(location).arrow_filesystem(location)


def _create(path: str, data: bytes) -> None:
    """Create ``path`` holding ``data``; FileExistsError if it exists. The folder is made
    only when missing (commits write four files each into existing folders: the common case
    costs one open, not a makedirs walk first)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.remove(path)  # no partial file under a name that is never overwritten
        raise
    os.close(fd)
