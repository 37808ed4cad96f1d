"""Thrift's compact protocol, for the few Parquet structures pyarrow does not expose.

pyarrow reads Parquet footers but not their page index (``ColumnIndex``, ``OffsetIndex``),
the column chunks' offsets of that index, or page headers; :mod:`.page_index` reads them with
this module. Values decode into a generic tree that keeps each value's wire type, so that a
structure decoded, edited and encoded again is what a Thrift library would write:

* a struct is a :class:`dict` from field id to :data:`Value`;
* a :data:`Value` is ``(type, payload)``: an ``int`` for the integer types, ``bool``,
  ``float``, ``bytes`` for binary (strings too), a struct's dict, or a :class:`TList`.

Malformed input raises :class:`ThriftError` (a ``ValueError``), never reads out of range
silently.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BINARY",
    "BOOL",
    "I16",
    "I32",
    "I64",
    "LIST",
    "STRUCT",
    "Struct",
    "TList",
    "ThriftError",
    "Value",
    "decode_struct",
    "encode_struct",
]

# compact protocol type codes (a bool's field header carries its value: 1 true, 2 false)
STOP, BOOL, _FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)

Value = tuple[int, Any]
Struct = dict[int, Value]


class ThriftError(ValueError):
    """Bytes that are not a well-formed compact-protocol structure."""


@dataclass(frozen=True, slots=True)
class TList:
    """A list (or set) of values of one wire type."""

    element_type: int
    items: list[Any]


def decode_struct(data: bytes | memoryview, pos: int = 0) -> tuple[Struct, int]:
    """The struct encoded at ``data[pos:]``, and the position after it."""
    try:
        return _Reader(data).read_struct(pos)
    except (IndexError, struct.error, RecursionError) as exc:
        raise ThriftError(f"truncated or malformed Thrift structure: {exc}") from exc


def encode_struct(fields: Struct) -> bytes:
    """``fields`` in the compact protocol (fields in id order)."""
    out = bytearray()
    _write_struct(out, fields)
    return bytes(out)


class _Reader:
    __slots__ = ("data",)

    def __init__(self, data: bytes | memoryview) -> None:
        self.data = data

    def varint(self, pos: int) -> tuple[int, int]:
        data = self.data
        shift = result = 0
        while True:
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result, pos
            shift += 7
            if shift > 70:
                raise ThriftError("varint longer than 10 bytes")

    def zigzag(self, pos: int) -> tuple[int, int]:
        n, pos = self.varint(pos)
        return (n >> 1) ^ -(n & 1), pos

    def read_struct(self, pos: int) -> tuple[Struct, int]:
        out: Struct = {}
        last = 0
        data = self.data
        while True:
            head = data[pos]
            pos += 1
            ttype = head & 0x0F
            if ttype == STOP:
                return out, pos
            delta = head >> 4
            if delta:
                fid = last + delta
            else:
                fid, pos = self.zigzag(pos)
            last = fid
            if ttype in (BOOL, _FALSE):
                out[fid] = (BOOL, ttype == BOOL)
                continue
            value, pos = self.read_value(ttype, pos)
            out[fid] = (ttype, value)

    def read_value(self, ttype: int, pos: int) -> tuple[Any, int]:
        if ttype in (I16, I32, I64):
            return self.zigzag(pos)
        if ttype == BINARY:
            n, pos = self.varint(pos)
            end = pos + n
            if end > len(self.data):
                raise ThriftError("binary value past the end of the data")
            return bytes(self.data[pos:end]), end
        if ttype == STRUCT:
            return self.read_struct(pos)
        if ttype in (LIST, SET):
            head = self.data[pos]
            pos += 1
            size, etype = head >> 4, head & 0x0F
            if size == 15:
                size, pos = self.varint(pos)
            items: list[Any] = []
            for _ in range(size):
                if etype in (BOOL, _FALSE):
                    items.append(self.data[pos] == BOOL)
                    pos += 1
                else:
                    item, pos = self.read_value(etype, pos)
                    items.append(item)
            return TList(BOOL if etype == _FALSE else etype, items), pos
        if ttype == BYTE:
            return int.from_bytes(self.data[pos : pos + 1], "little", signed=True), pos + 1
        if ttype == DOUBLE:
            (d,) = struct.unpack_from("<d", self.data, pos)
            return d, pos + 8
        if ttype == MAP:
            size, pos = self.varint(pos)
            if size == 0:
                return [], pos
            kinds = self.data[pos]
            pos += 1
            pairs = []
            for _ in range(size):
                k, pos = self.read_value(kinds >> 4, pos)
                v, pos = self.read_value(kinds & 0x0F, pos)
                pairs.append((k, v))
            return pairs, pos
        raise ThriftError(f"unknown compact type {ttype}")


def _varint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(out: bytearray, n: int) -> None:
    _varint(out, (n << 1) ^ (n >> 63))


def _write_struct(out: bytearray, fields: Struct) -> None:
    last = 0
    for fid in sorted(fields):
        ttype, value = fields[fid]
        wire = (BOOL if value else _FALSE) if ttype == BOOL else ttype
        delta = fid - last
        if 0 < delta <= 15:
            out.append((delta << 4) | wire)
        else:
            out.append(wire)
            _zigzag(out, fid)
        last = fid
        if ttype != BOOL:
            _write_value(out, ttype, value)
    out.append(STOP)


def _write_value(out: bytearray, ttype: int, value: Any) -> None:
    if ttype in (I16, I32, I64):
        _zigzag(out, value)
    elif ttype == BINARY:
        _varint(out, len(value))
        out += value
    elif ttype == STRUCT:
        _write_struct(out, value)
    elif ttype in (LIST, SET):
        items = value.items
        etype = value.element_type
        if len(items) < 15:
            out.append((len(items) << 4) | etype)
        else:
            out.append(0xF0 | etype)
            _varint(out, len(items))
        for item in items:
            if etype == BOOL:
                out.append(BOOL if item else _FALSE)
            else:
                _write_value(out, etype, item)
    elif ttype == BYTE:
        out += int(value).to_bytes(1, "little", signed=True)
    elif ttype == DOUBLE:
        out += struct.pack("<d", value)
    elif ttype == MAP:
        _varint(out, len(value))
        if value:
            raise ThriftError("encoding a non-empty map is not supported")
    else:
        raise ThriftError(f"unknown compact type {ttype}")
