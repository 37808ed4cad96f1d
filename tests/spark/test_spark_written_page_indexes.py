"""Files Spark's Parquet writer (parquet-java) wrote, with its page index, many pages per row
group, dictionary and plain pages, v1 and v2 data pages: the position search that decodes only
the pages that may match finds exactly the rows a whole read filters to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.metadata.expressions import InclusiveMetricsEvaluator, bind, parse, to_arrow_filter
from lakecat.metadata.io import page_index
from lakecat.metadata.io.fileio import LocalFileIO
from lakecat.metadata.io.matching import matching_positions
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.schema.name_mapping import NameMapping
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import IntegerType, LongType, NestedField, StringType

pytestmark = pytest.mark.spark

SCHEMA = Schema.of(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "s", StringType()),
    NestedField(3, "k", IntegerType()),
)
ROWS = 20_000
FILTERS = [
    "id IN (3, 4999, 5000, 19999)",
    "id BETWEEN 7000 AND 7100",
    "k = 17",
    "s = 'v42'",
    "s IS NULL AND id < 3000",
    "id = 12345 OR s = 'v7'",
    "k < 0",
]


@pytest.fixture(scope="module", params=["v1", "v2"])
def spark_file(request: Any, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> DataFile:
    out = tmp_path_factory.mktemp(f"pages-{request.param}") / "out"
    (
        spark.range(0, ROWS)
        .selectExpr(
            "id",
            "CASE WHEN id % 7 = 0 THEN NULL ELSE concat('v', cast(id % 300 AS string)) END AS s",
            "cast(id * 37 % 1000 AS int) AS k",
        )
        .coalesce(1)
        .write.option("parquet.page.row.count.limit", "500")
        .option("parquet.block.size", str(256 * 1024))  # several row groups
        .option("parquet.writer.version", request.param)
        .parquet(str(out))
    )
    [path] = sorted(Path(out).glob("*.parquet"))
    footer = pq.read_metadata(path)
    assert footer.num_row_groups >= 1 and footer.row_group(0).column(0).has_offset_index
    return DataFile(str(path), "PARQUET", (), footer.num_rows, path.stat().st_size)


@pytest.mark.parametrize("text", FILTERS)
def test_pages_parquet_java_wrote_give_the_rows_a_whole_read_gives(
    spark_file: DataFile, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bound = bind(SCHEMA, parse(text))
    arrow_filter = to_arrow_filter(bound)

    def positions() -> list[int]:
        found = matching_positions(
            LocalFileIO(),
            spark_file,
            filter_schema=SCHEMA,
            row_filter=arrow_filter,
            row_group_filter=InclusiveMetricsEvaluator(SCHEMA, bound),
            threads=2,
            name_mapping=NameMapping.of_schema(SCHEMA),
        )
        return list(found.to_pylist())

    whole = pq.read_table(spark_file.file_path)
    numbered = whole.append_column("pos", pa.array(range(whole.num_rows), pa.int64()))
    want = numbered.filter(arrow_filter).column("pos").to_pylist()

    framed: list[int] = []
    real = page_index._frame

    def counting(*args: Any) -> bytes:
        framed.append(args[-1])
        return real(*args)

    monkeypatch.setattr(page_index, "worth_reading", lambda footer_bytes, rows: True)
    monkeypatch.setattr(page_index, "_frame", counting)
    assert positions() == want
    if text in FILTERS[:2]:  # a clustered key: a few pages of 500 rows decoded, not all
        assert framed and sum(framed) < ROWS / 4
