"""Iceberg's partition transforms as the catalog's SQL functions (``lake.system.bucket(16,
id)``, Iceberg's names and types): each agrees with lakecat's own transforms (the ones that
write partition values) over edge values and a seeded random sample, with the spec's hash
test vectors, and with the partitions of files lakecat wrote."""

from __future__ import annotations

import datetime as dt
import decimal
import random
from typing import Any

import pyarrow as pa
import pytest

from lakecat.metadata.partitioning import parse_transform
from lakecat.metadata.schema import types as T

pytestmark = pytest.mark.spark

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
RNG = random.Random(20261128)

INTS = [0, 1, -1, 7, -7, 15, 16, -16, 34, 2**31 - 1, -(2**31)] + [
    RNG.randint(-(2**31), 2**31 - 1) for _ in range(40)
]
LONGS = [0, 1, -1, 34, 2**63 - 1, -(2**63)] + [RNG.randint(-(2**63), 2**63 - 1) for _ in range(40)]
DATES = [dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(1969, 1, 1), dt.date(1968, 12, 31)]
DATES += [dt.date(2017, 11, 16), dt.date(2000, 2, 29), dt.date(1, 1, 1), dt.date(9999, 12, 31)]
DATES += [
    dt.date(1970, 1, 1) + dt.timedelta(days=RNG.randint(-200_000, 200_000)) for _ in range(40)
]
MICROS = [0, 1, -1, 3_599_999_999, 3_600_000_000, -3_600_000_000, -3_600_000_001]
MICROS += [RNG.randint(-(10**16), 10**16) for _ in range(40)]
STRINGS = ["", "a", "abc", "iceberg", "ünïcödé", "日本語のテキスト", "😀 emoji", "x" * 40]
BINARIES = [b"", b"\x00", b"\x00\x01\x02\x03", bytes(range(256)), b"\xff" * 7]
DECIMALS = [decimal.Decimal(v) for v in ("0.00", "14.20", "-14.20", "0.01", "-0.01", "999.99")]
DECIMALS += [decimal.Decimal(RNG.randint(-99999, 99999)).scaleb(-2) for _ in range(30)]

# (Spark SQL type, lakecat type, arrow type, values)
TYPES: dict[str, tuple[str, Any, pa.DataType, list[Any]]] = {
    "int": ("int", T.IntegerType(), pa.int32(), INTS),
    "bigint": ("bigint", T.LongType(), pa.int64(), LONGS),
    "date": ("date", T.DateType(), pa.date32(), DATES),
    "timestamp": ("timestamp", T.TimestamptzType(), pa.timestamp("us", "UTC"), MICROS),
    "timestamp_ntz": ("timestamp_ntz", T.TimestampType(), pa.timestamp("us"), MICROS),
    "string": ("string", T.StringType(), pa.string(), STRINGS),
    "binary": ("binary", T.BinaryType(), pa.binary(), BINARIES),
    "decimal": ("decimal(7,2)", T.DecimalType(7, 2), pa.decimal128(7, 2), DECIMALS),
}

CASES = [
    ("years", None, ["date", "timestamp", "timestamp_ntz"]),
    ("months", None, ["date", "timestamp", "timestamp_ntz"]),
    ("days", None, ["date", "timestamp", "timestamp_ntz"]),
    ("hours", None, ["timestamp", "timestamp_ntz"]),
    ("bucket", 16, list(TYPES)),
    ("bucket", 7, ["int", "bigint", "string", "decimal"]),
    ("truncate", 10, ["int", "bigint", "decimal"]),
    ("truncate", 3, ["int", "string", "binary"]),
]


def case_values(function: str, name: str) -> list[Any]:
    values = TYPES[name][3]
    if function == "truncate" and name in ("int", "bigint"):
        # the type's smallest values truncate below it: lakecat refuses to write such a
        # partition value (Iceberg Java's wraps around); not compared
        return [v for v in values if abs(v) < 2**30]
    return values


def spark_values(spark: Any, sql_type: str, values: list[Any]) -> Any:
    if sql_type.startswith("timestamp"):  # micros, as Spark holds them
        return spark.sql(
            "SELECT CAST(v AS {t}) AS v FROM VALUES {rows} AS r(v)".format(
                t=sql_type,
                rows=", ".join(f"(timestamp_micros({m}))" for m in values),
            )
        ).selectExpr(f"CAST(v AS {sql_type}) AS v")
    return spark.createDataFrame([(v,) for v in values], f"v {sql_type}")


def expected(function: str, arg: int | None, name: str) -> list[Any]:
    _, source, arrow_type, _ = TYPES[name]
    values = case_values(function, name)
    text = {"years": "year", "months": "month", "days": "day", "hours": "hour"}.get(function)
    transform = parse_transform(text or f"{function}[{arg}]")
    if name.startswith("timestamp"):
        array = pa.array(values, pa.int64()).cast(arrow_type)
    else:
        array = pa.array(values, arrow_type)
    out = transform.apply_arrow(source, array).to_pylist()
    if function == "days":  # a date, as Iceberg's days()
        assert all(isinstance(d, dt.date) for d in out)
    return out


@pytest.mark.parametrize(
    ("function", "arg", "name"),
    [(f, a, n) for f, a, names in CASES for n in names],
)
def test_a_transform_function_computes_what_lakecat_writes_as_partition_values(
    lake: Any, function: str, arg: int | None, name: str
) -> None:
    sql_type = TYPES[name][0]
    frame = spark_values(lake.spark, sql_type, case_values(function, name))
    call = f"lake.system.{function}({'' if arg is None else f'{arg}, '}v)"

    answer = [r[0] for r in frame.selectExpr(call).collect()]

    want = expected(function, arg, name)
    if name == "binary" and function == "truncate":
        answer = [bytes(a) for a in answer]
    assert answer == want


def test_bucket_hashes_the_spec_s_test_vectors(lake: Any) -> None:
    # Iceberg's table spec, "Appendix B: 32-bit Hash Requirements"; bucket = (hash & MAX) % n
    vectors = {
        "CAST(34 AS INT)": 2017239379,
        "CAST(34 AS BIGINT)": 2017239379,
        "CAST(14.20 AS DECIMAL(4, 2))": -500754589,
        "DATE '2017-11-16'": -653330422,
        "TIMESTAMP_NTZ '2017-11-16 22:31:08'": -2047944441,
        "'iceberg'": 1210000089,
        "X'00010203'": -188683207,
    }
    n = 2**31 - 1  # the largest bucket count: the non-negative hash itself, below it
    for literal, hashed in vectors.items():
        got = lake.sql(f"SELECT lake.system.bucket({n}, {literal})")[0][0]
        assert got == (hashed & 0x7FFFFFFF) % n, literal
    assert lake.sql("SELECT lake.system.bucket(128, 'abc')")[0][0] == 122  # Iceberg's doc


def test_functions_resolve_with_or_without_system_and_nulls_stay_null(lake: Any) -> None:
    row = lake.sql(
        "SELECT lake.system.bucket(16, 34), lake.bucket(16, 34), lake.system.BUCKET(16, 34), "
        "lake.system.truncate(4, CAST(NULL AS STRING)), lake.system.years(DATE '2026-11-28')"
    )[0]
    assert tuple(row) == (3, 3, 3, None, 56)
    listed = {r[0] for r in lake.sql("SHOW USER FUNCTIONS IN lake.system")}
    assert {"lake.system.years", "lake.system.bucket", "lake.system.truncate"} <= listed


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("lake.system.bucket(16, 1.5D)", "bucket does not take a double"),
        ("lake.system.hours(DATE '2026-01-01')", "hours does not take a date"),
        ("lake.system.truncate('4', 'abc')", "first argument must be a tinyint, smallint or int"),
        ("lake.system.years()", "years takes one argument"),
        ("lake.system.nope(1)", "nope"),
        ("lake.db.bucket(16, 1)", "bucket"),
    ],
)
def test_a_bad_call_is_an_analysis_error_that_names_the_problem(
    lake: Any, call: str, message: str
) -> None:
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match=message):
        lake.sql(f"SELECT {call}")


def test_a_non_positive_bucket_count_fails_with_a_readable_error(lake: Any) -> None:
    with pytest.raises(Exception, match="the number of buckets must be positive, not 0"):
        lake.sql("SELECT lake.system.bucket(0, id) FROM range(3)")


def test_bucket_and_truncate_find_the_partitions_lakecat_wrote(lake: Any) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    lake.catalog.create_table(
        "db.t", schema, partition_by=[("id", "bucket[8]"), ("name", "truncate[2]")]
    )
    lake.sql(
        "INSERT INTO lake.db.t SELECT id, concat(char(97 + int(id % 5)), 'x', id) "
        "FROM range(0, 500)"
    )

    per_file = lake.sql(
        "SELECT partition.id_bucket, partition.name_trunc, record_count FROM lake.db.t.files"
    )
    computed = lake.sql(
        "SELECT lake.system.bucket(8, id), lake.system.truncate(2, name), count(*) "
        "FROM lake.db.t GROUP BY 1, 2"
    )
    counts: dict[tuple[int, str], int] = {}
    for bucket, prefix, count in per_file:
        counts[(bucket, prefix)] = counts.get((bucket, prefix), 0) + count
    assert {(b, p): c for b, p, c in computed} == counts
