"""Property values read as Iceberg Java reads them, so every engine on a table behaves alike."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from lakecat.metadata import properties as P
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import LongType, NestedField
from lakecat.metadata.table.apply import apply
from lakecat.metadata.table.new_table import new_table_metadata
from lakecat.metadata.table.sorting import UNSORTED
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.updates import SetProperties

KEY = "write.delete.mode"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", True),
        ("TRUE", True),
        ("True", True),
        ("false", False),
        ("yes", False),
        ("1", False),
        (" true", False),
        ("true ", False),
        ("", False),
    ],
)
def test_a_boolean_is_true_in_any_case_and_nothing_else_as_java_parse_boolean(
    value: str, expected: bool
) -> None:
    assert P.get_bool({"write.wap.enabled": value}, "write.wap.enabled", True) is expected


def test_an_unset_boolean_is_its_default() -> None:
    assert P.get_bool({}, "write.wap.enabled", True) is True
    assert P.get_bool({}, "write.wap.enabled", False) is False


@pytest.mark.parametrize("value", ["merge-on-read", "Merge-On-Read", "MERGE-ON-READ"])
def test_a_choice_reads_in_any_case(value: str) -> None:
    assert P.get_choice({KEY: value}, KEY) == P.MERGE_ON_READ


def test_an_unset_choice_is_its_default() -> None:
    assert P.get_choice({}, KEY) == P.COPY_ON_WRITE


@pytest.mark.parametrize("value", [" merge-on-read", "merge-on-read ", "merge_on_read", "", "mor"])
def test_a_choice_with_blanks_around_it_or_another_spelling_is_refused_naming_it(
    value: str,
) -> None:
    """Iceberg's fromName parsers take neither: the table would run one way here and fail
    (or run another way) in Iceberg Java."""
    with pytest.raises(ValidationError) as raised:
        P.get_choice({KEY: value}, KEY)
    assert str(raised.value) == (
        f"table property {KEY}={value!r}: use one of ('copy-on-write', 'merge-on-read')"
    )


def _metadata(properties: dict[str, str]) -> TableMetadata:
    schema = Schema((NestedField(1, "id", LongType()),))
    return new_table_metadata(
        schema=schema,
        spec=PartitionSpec(0, ()),
        sort_order=UNSORTED,
        location="file:///w/db/t",
        properties=properties,
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("write.merge.mode", "merge_on_read"),
        ("write.update.isolation-level", "strict"),
        ("write.distribution-mode", "sideways"),
        ("write.delete.distribution-mode", " hash"),
        ("write.format.default", "orc"),  # lakecat writes Parquet data files
    ],
)
def test_a_value_a_property_does_not_take_is_refused_when_set_or_created(
    key: str, value: str
) -> None:
    """Refused when set, not only when a later statement reads it (Iceberg Java waits for the
    statement): the mistake surfaces where it is made."""
    with pytest.raises(
        ValidationError, match=re.escape(f"table property {key}={value!r}: use one of")
    ):
        _metadata({key: value})
    base = _metadata({})
    with pytest.raises(
        ValidationError, match=re.escape(f"table property {key}={value!r}: use one of")
    ):
        apply(base, [SetProperties({"owner": "x", key: value})])


def test_a_value_another_engine_set_does_not_stop_other_changes() -> None:
    """A table that Iceberg Java configured with a bad value still takes other properties (and
    the same value again, a no-op): only the statements that read it refuse it."""
    base = replace(_metadata({}), properties={"write.merge.mode": "nope"})
    changed = apply(base, [SetProperties({"owner": "x", "write.merge.mode": "nope"})])
    assert changed.properties == {"write.merge.mode": "nope", "owner": "x"}
    with pytest.raises(ValidationError, match=r"write\.merge\.mode='nope'"):
        P.get_choice(changed.properties, "write.merge.mode")
    fixed = apply(changed, [SetProperties({"write.merge.mode": "Merge-On-Read"})])
    assert P.get_choice(fixed.properties, "write.merge.mode") == P.MERGE_ON_READ
