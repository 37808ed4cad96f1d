"""A local FileIO that counts the bytes read through ``open_input`` (Parquet reads), for tests
that check how much of a file a read touches."""

from __future__ import annotations

import io

from lakecat.metadata.io.fileio import LocalFileIO


class _CountingFile(io.FileIO):
    def __init__(self, path: str, counter: list[int]) -> None:
        super().__init__(path, "rb")
        self.counter = counter

    def read(self, size: int = -1) -> bytes:
        data = super().read(size)
        self.counter[0] += len(data)
        return data

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        n = super().readinto(buffer) or 0
        self.counter[0] += n
        return n


class CountingIO(LocalFileIO):
    """Local files; ``counter[0]`` is the bytes read through ``open_input`` so far."""

    def __init__(self) -> None:
        self.counter = [0]

    def open_input(self, location: str) -> _CountingFile:
        return _CountingFile(self._path(location), self.counter)
