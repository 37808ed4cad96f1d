"""Compact theta sketches, the ``apache-datasketches-theta-v1`` blobs of statistics files.

A theta sketch (Apache DataSketches) keeps the 63-bit hashes of the distinct values it saw that
lie below ``theta``; the number of distinct values is estimated as ``retained / (theta / 2^63)``.
Iceberg's Puffin spec stores one per column: the compact form, serialized as DataSketches' Java
library writes it (``CompactSketch.toByteArray``, serialization version 3, little-endian):

==========  ==========================================================================
bytes 0-7   preamble: ``preLongs`` (byte 0, low 6 bits), serialization version 3, family
            3 (compact), two unused bytes, flags (byte 5), the seed's 16-bit hash (6-7)
bytes 8-15  when ``preLongs`` >= 2: the number of retained hashes (int), ``p`` (float)
bytes 16-23 when ``preLongs`` = 3: ``theta`` as a long (else 2^63 - 1: exact mode)
then        the retained hashes, 8 bytes each; a single-item sketch (flag 0x20, one
            preamble long) holds one hash and no count
==========  ==========================================================================

The sketches are built in Spark's JVM by DataSketches itself (the catalog plugin's
``ndv_sketch``); this module reads the layout to compute the ``ndv`` property a blob carries
(Iceberg's ``(long) sketch.getEstimate()``) and to refuse bytes that are not such a sketch.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from lakecat.metadata.deletes.puffin import ZSTD, PuffinBlob
from lakecat.metadata.errors import CorruptMetadata

__all__ = [
    "DEFAULT_SEED_HASH",
    "NDV_PROPERTY",
    "THETA_BLOB_TYPE",
    "DescribedBlob",
    "ThetaSketch",
    "ndv_blob",
    "ndvs",
    "parse_theta_sketch",
]

THETA_BLOB_TYPE = "apache-datasketches-theta-v1"
NDV_PROPERTY = "ndv"
DEFAULT_SEED_HASH = 0x93CC
"""The 16-bit hash of DataSketches' default seed (9001), which Iceberg's sketches use."""
MAX_THETA = (1 << 63) - 1
_SERIAL_VERSION = 3
_COMPACT_FAMILY = 3
_FLAG_BIG_ENDIAN = 0x01
_FLAG_EMPTY = 0x04
_FLAG_SINGLE_ITEM = 0x20
_PREAMBLE = struct.Struct("<BBBBBBH")


@dataclass(frozen=True)
class ThetaSketch:
    """What a compact theta sketch says: how many hashes it kept, below which theta."""

    retained: int
    theta: int
    empty: bool

    @property
    def estimate(self) -> float:
        """The estimated number of distinct values, computed as DataSketches computes it."""
        if self.empty or self.retained == 0:
            return 0.0
        return self.retained * (float(MAX_THETA) / self.theta)

    @property
    def ndv(self) -> int:
        """The estimate as Iceberg records it in a blob's ``ndv`` property (truncated)."""
        return int(self.estimate)


def parse_theta_sketch(data: bytes) -> ThetaSketch:
    """The header of a serialized compact theta sketch, checked against its length;
    :class:`CorruptMetadata` for anything else (another family, version or seed, or a
    compressed version 4 sketch)."""
    if len(data) < _PREAMBLE.size:
        raise CorruptMetadata(f"theta sketch truncated: {len(data)} bytes")
    first, version, family, _, _, flags, seed_hash = _PREAMBLE.unpack_from(data)
    pre_longs = first & 0x3F
    if version != _SERIAL_VERSION:
        raise CorruptMetadata(
            f"theta sketch serialization version {version}: lakecat reads version 3"
        )
    if family != _COMPACT_FAMILY:
        raise CorruptMetadata(f"not a compact theta sketch: family {family}")
    if flags & _FLAG_BIG_ENDIAN:
        raise CorruptMetadata("theta sketch is big-endian")
    if seed_hash != DEFAULT_SEED_HASH and not flags & _FLAG_EMPTY:
        raise CorruptMetadata(
            f"theta sketch seed hash {seed_hash:#06x}: not DataSketches' default seed "
            f"({DEFAULT_SEED_HASH:#06x})"
        )
    if pre_longs == 1:
        if flags & _FLAG_SINGLE_ITEM:
            _expect_size(data, 16)
            return ThetaSketch(retained=1, theta=MAX_THETA, empty=False)
        _expect_size(data, 8)
        return ThetaSketch(retained=0, theta=MAX_THETA, empty=bool(flags & _FLAG_EMPTY))
    if pre_longs not in (2, 3) or len(data) < 8 * pre_longs:
        raise CorruptMetadata(f"theta sketch preamble of {pre_longs} longs in {len(data)} bytes")
    (retained,) = struct.unpack_from("<i", data, 8)
    theta = struct.unpack_from("<q", data, 16)[0] if pre_longs == 3 else MAX_THETA
    if retained < 0 or not 0 < theta <= MAX_THETA:
        raise CorruptMetadata(f"theta sketch with {retained} hashes below theta {theta}")
    _expect_size(data, 8 * (pre_longs + retained))
    return ThetaSketch(retained=retained, theta=theta, empty=bool(flags & _FLAG_EMPTY))


def ndv_blob(field_id: int, sketch: bytes, snapshot_id: int, sequence_number: int) -> PuffinBlob:
    """The blob of a column's sketch, as Iceberg's Spark runtime writes it: zstd-compressed,
    with the column's field id and the ``ndv`` estimate."""
    parsed = parse_theta_sketch(sketch)
    return PuffinBlob(
        type=THETA_BLOB_TYPE,
        data=sketch,
        fields=(field_id,),
        snapshot_id=snapshot_id,
        sequence_number=sequence_number,
        properties={NDV_PROPERTY: str(parsed.ndv)},
        compression_codec=ZSTD,
    )


class DescribedBlob(Protocol):
    """A blob as a Puffin footer or a table's ``statistics`` entry describes it."""

    @property
    def type(self) -> str: ...

    @property
    def fields(self) -> tuple[int, ...]: ...

    @property
    def properties(self) -> Mapping[str, str]: ...


def ndvs(blobs: Iterable[DescribedBlob]) -> Mapping[int, int]:
    """The ``ndv`` of each column that theta blobs cover, by field id: the blobs of a
    statistics file's footer, or the ``blob-metadata`` the table metadata registers."""
    out: dict[int, int] = {}
    for blob in blobs:
        raw = blob.properties.get(NDV_PROPERTY)
        if blob.type != THETA_BLOB_TYPE or len(blob.fields) != 1 or raw is None:
            continue
        if not raw.isdigit():
            raise CorruptMetadata(f"theta blob of field {blob.fields[0]} has ndv {raw!r}")
        out[blob.fields[0]] = int(raw)
    return out


def _expect_size(data: bytes, size: int) -> None:
    if len(data) != size:
        raise CorruptMetadata(f"theta sketch of {len(data)} bytes, its header says {size}")
