"""``CALL lake.system.rewrite_table_path``: stage a table's metadata for another place, copy
the planned files, register the copy and read it through the SQL catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from table_copies import copy_files, planned_copies

from lakecat.metadata.io import local_path

pytestmark = pytest.mark.spark


def test_a_v3_table_with_deletion_vectors_is_copied_and_read_at_its_new_place(
    lake: Any, tmp_path: Path
) -> None:
    lake.sql(
        "CREATE TABLE lake.db.t (id bigint, cat string) PARTITIONED BY (cat) "
        "TBLPROPERTIES ('format-version' = '3', 'write.delete.mode' = 'merge-on-read', "
        "'write.update.mode' = 'merge-on-read')"
    )
    lake.sql("INSERT INTO lake.db.t SELECT id, IF(id % 2 = 0, 'a', 'b') FROM range(0, 20)")
    lake.sql("DELETE FROM lake.db.t WHERE id % 5 = 0")
    lake.sql("UPDATE lake.db.t SET id = id + 100 WHERE id = 3")
    table = lake.catalog.load_table("db.t")
    target = (tmp_path / "moved").as_uri()
    expected = lake.sql("SELECT id, cat, _row_id FROM lake.db.t ORDER BY id")

    df = lake.spark.sql(
        f"CALL lake.system.rewrite_table_path(table => 'db.t', source_prefix => "
        f"'{table.location}', target_prefix => '{target}')"
    )
    [result] = df.collect()

    assert df.columns == [
        "latest_version",
        "file_list_location",
        "rewritten_manifest_file_paths_count",
        "rewritten_delete_file_paths_count",
    ]
    assert table.metadata_location.endswith("/" + result.latest_version)
    assert result.rewritten_delete_file_paths_count >= 2  # a DV per data file the DML touched
    assert copy_files(planned_copies(result.file_list_location)) > 0
    lake.sql(
        f"CALL lake.system.register_table('db.moved', '{target}/metadata/{result.latest_version}')"
    )
    assert lake.sql("SELECT id, cat, _row_id FROM lake.db.moved ORDER BY id") == expected
    paths = [r.file_path for r in lake.sql("SELECT file_path FROM lake.db.moved.all_delete_files")]
    assert paths and all(p.startswith(target + "/") for p in paths)
    assert lake.iceberg_rows("db.moved", "id") == [(r.id,) for r in expected]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("source_prefix => 'LOC', target_prefix => 'LOC'", "same as target prefix"),
        ("source_prefix => '/nope', target_prefix => '/x'", "not under the source prefix"),
        ("source_prefix => 'LOC', target_prefix => '/x', end_version => 'v7.json'", "version"),
        ("source_prefix => 'LOC'", "target_prefix"),
    ],
)
def test_bad_input_names_the_problem_and_changes_nothing(
    lake: Any, arguments: str, message: str
) -> None:
    lake.sql("CREATE TABLE lake.db.t (id bigint)")
    lake.sql("INSERT INTO lake.db.t VALUES (1)")
    table = lake.catalog.load_table("db.t")
    before = table.metadata_location

    with pytest.raises(Exception, match=message):
        lake.sql(
            "CALL lake.system.rewrite_table_path(table => 'db.t', "
            + arguments.replace("LOC", table.location)
            + ")"
        )

    assert table.refresh().metadata_location == before
    assert not list(Path(local_path(table.location) or "").rglob("copy-table-staging-*/*"))
