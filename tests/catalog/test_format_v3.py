"""Format version 3 tables: lakecat reads them (deletion vectors: tests/interop) and refuses,
before anything lands, every change it would make without keeping v3's row lineage; v3 types
it cannot read are refused by name."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.metadata.errors import UnsupportedFeature
from lakecat.metadata.schema.types import primitive_from_string


def _as_v3(catalog: Catalog, tmp_path: Path) -> str:
    """A copy of db.t's current metadata made format version 3, registered as db.v3."""
    table = catalog.load_table("db.t")
    location = table.metadata_location.removeprefix("file://")
    raw = Path(location).read_bytes()
    doc = json.loads(gzip.decompress(raw) if location.endswith(".gz.metadata.json") else raw)
    doc["format-version"] = 3
    doc["next-row-id"] = 6
    for i, snap in enumerate(doc["snapshots"]):
        snap["first-row-id"], snap["added-rows"] = 3 * i, 3
    target = tmp_path / "00009-v3.metadata.json"
    target.write_text(json.dumps(doc))
    catalog.register_table("db.v3", str(target))
    return str(target)


def test_a_v3_table_reads_and_every_change_is_refused_before_anything_lands(
    catalog: Catalog, tmp_path: Path
) -> None:
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1, 2, 3]}))
    t.append(pa.table({"id": [4, 5, 6]}))
    location = _as_v3(catalog, tmp_path)
    v3 = catalog.load_table("db.v3")
    assert v3.metadata.format_version == 3 and v3.metadata.next_row_id == 6
    assert [s.first_row_id for s in v3.snapshots()] == [0, 3]
    assert sorted(v3.to_arrow().column("id").to_pylist()) == [1, 2, 3, 4, 5, 6]
    files_before = {
        os.path.join(d, f) for d, _, fs in os.walk(t.location.removeprefix("file://")) for f in fs
    }
    for change in (
        lambda: v3.append(pa.table({"id": [7]})),
        lambda: v3.delete("id = 1"),
        lambda: v3.set_properties({"owner": "x"}),
        lambda: v3.create_tag("audited"),
    ):
        with pytest.raises(UnsupportedFeature, match="format version 3") as info:
            change()
        assert info.value.feature == "writing format-version 3"
    reloaded = catalog.load_table("db.v3")
    assert reloaded.metadata_location.removeprefix("file://") == location
    files_after = {
        os.path.join(d, f) for d, _, fs in os.walk(t.location.removeprefix("file://")) for f in fs
    }
    assert files_after == files_before  # the refused append's files are gone


@pytest.mark.parametrize(
    "text", ["timestamp_ns", "timestamptz_ns", "variant", "unknown", "geometry(srid:4326)"]
)
def test_v3_types_lakecat_cannot_read_are_refused_by_name(text: str) -> None:
    with pytest.raises(UnsupportedFeature, match=text.split("(")[0]) as info:
        primitive_from_string(text)
    assert info.value.feature == f"type {text}"
