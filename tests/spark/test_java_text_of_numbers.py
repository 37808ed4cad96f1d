"""Floats and doubles as text exactly as the JVM prints them (``java.lang.Double/Float.toString``),
which is how Iceberg Java shows partition values (file paths, ``partition_summaries``)."""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest

from lakecat.metadata.schema import DoubleType, FloatType, human_string

pytestmark = pytest.mark.spark


def _float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def _values(rng: random.Random, count: int, exponents: tuple[int, int]) -> list[float]:
    """Values as people write them: up to five significant digits, times a power of ten."""
    return [float(f"{rng.randint(-99999, 99999)}e{rng.randint(*exponents)}") for _ in range(count)]


def test_floats_and_doubles_print_as_the_jvm_prints_them(spark: Any) -> None:
    jvm = spark._jvm.java.lang
    rng = random.Random(7)
    doubles = _values(rng, 1500, (-12, 12))
    floats = [_float32(v) for v in _values(rng, 1500, (-12, 3))]
    # These are values where Java 17 (this project's JVM) and Java 19+ print alike; Java 17
    # prints some floats of 10^8 and more, and some doubles of many digits, with an extra
    # digit (Java 19+ prints the shortest text that reads back, as lakecat does).
    for value in doubles:
        assert human_string(DoubleType(), value) == jvm.Double.toString(value), value
    for value in floats:
        java = jvm.Float.toString(jvm.Float.intBitsToFloat(_bits(value)))
        assert human_string(FloatType(), value) == java, value


def _bits(value: float) -> int:
    return int(struct.unpack("<i", struct.pack("<f", value))[0])
