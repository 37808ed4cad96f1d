"""Row values on the command line: ``--set col=VALUE`` literals and ``--from FILE`` rows.

Both are typed by the table's schema and checked before anything is written: a literal is
parsed as its column's type (:func:`set_values`), and the rows of a Parquet, CSV or JSON-lines
file are read with the table's types for the columns they have (:func:`read_rows`). Every
failure is a :class:`~lakecat.metadata.errors.ValidationError` naming the argument, so the
command exits with code 1 and one line, and the table is unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from lakecat.metadata.errors import NullInRequiredColumn, SchemaMismatch, ValidationError
from lakecat.metadata.schema.arrow import schema_to_arrow
from lakecat.metadata.schema.conversions import from_python, to_python
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    BinaryType,
    FixedType,
    NestedField,
    PrimitiveType,
    StringType,
    UUIDType,
)

__all__ = ["FILE_FORMATS", "read_rows", "set_values"]

NULL = "null"
FILE_FORMATS = ("parquet", "csv", "json")
_FORMAT_OF_SUFFIX = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
}
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)


# ---- --set col=VALUE ----------------------------------------------------------------------------


def set_values(schema: Schema, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """``[("amount", "0.5"), ("note", "null")]`` -> ``{"amount": 0.5, "note": None}``, each
    value parsed as its column's type (see :func:`literal`).

    Raises :class:`~lakecat.metadata.errors.UnknownColumn` for a column the table does not
    have, :class:`ValidationError` for a column given twice, a column that is not a top-level
    primitive, or a value that is not one of its type."""
    values: dict[str, Any] = {}
    for name, text in pairs:
        if name in values:
            raise ValidationError(f"--set {name}: the column is set twice")
        field = schema.find_field(name)
        if schema.parent_id(field.field_id) is not None:
            raise ValidationError(
                f"--set {name}: a field nested in a struct cannot be set from the command line"
            )
        values[name] = literal(field, text)
    return values


def literal(field: NestedField, text: str) -> Any:
    """The value of ``text`` for ``field``, as pyarrow takes it for the column's Arrow type.

    ``null`` (any case) is null; for string columns, a value in single quotes is taken as the
    text between them (``'null'`` is the four letters). Binary and fixed columns take hex.
    Other types read as :func:`~lakecat.metadata.schema.conversions.from_python` reads text:
    numbers, ``true``/``false``, ISO-8601 dates, times and timestamps (a timestamptz without
    an offset is UTC), decimals that need no rounding, UUIDs."""
    name = field.name
    t = field.field_type
    if not isinstance(t, PrimitiveType):
        raise ValidationError(f"--set {name}: a {t} column cannot be set from the command line")
    if text.strip().lower() == NULL:
        if field.required:
            raise NullInRequiredColumn(f"--set {name}={text}: {name} is a required column")
        return None
    value: Any = text
    if isinstance(t, StringType) and len(text) >= 2 and text[0] == text[-1] == "'":
        value = text[1:-1]
    elif isinstance(t, (BinaryType, FixedType)):
        try:
            value = bytes.fromhex(text.strip())
        except ValueError:
            raise ValidationError(f"--set {name}={text}: {t} values are given in hex") from None
    try:
        python = to_python(t, from_python(t, value))
    except ValidationError as exc:
        raise ValidationError(f"--set {name}={text}: {exc}") from None
    return python.bytes if isinstance(t, UUIDType) else python  # pyarrow's uuid takes bytes


# ---- --from FILE --------------------------------------------------------------------------------


def file_format(path: str, given: str | None) -> str:
    """``given``, else the format the file name's suffix says."""
    if given is not None:
        return given
    found = _FORMAT_OF_SUFFIX.get(Path(path).suffix.lower())
    if found is None:
        raise ValidationError(
            f"--from {path}: cannot tell its format from the name; "
            f"give --format ({', '.join(FILE_FORMATS)})"
        )
    return found


def read_rows(path: str, schema: Schema, *, given_format: str | None = None) -> pa.Table:
    """The rows of a Parquet, CSV or JSON-lines file, with the table's types.

    CSV and JSON values are parsed as the types of the table's columns of the same name
    (CSV: timestamps of a timestamptz column need a ``Z`` or an offset); only the columns the
    file has are returned, so an upsert sets just those. Columns of other types (a Parquet
    file's ``int32`` for a ``long``) are cast to the table's; one that does not cast is a
    :class:`~lakecat.metadata.errors.SchemaMismatch`. Columns the table does not have are
    kept, for the operation to refuse."""
    fmt = file_format(path, given_format)
    if not os.path.isfile(path):
        raise ValidationError(f"--from {path}: no such file")
    target = schema_to_arrow(schema)
    try:
        if fmt == "parquet":
            rows = pq.read_table(path)
        elif fmt == "csv":
            types = {f.name: f.type for f in target if not pa.types.is_nested(f.type)}
            options = pa_csv.ConvertOptions(column_types=types, strings_can_be_null=True)
            rows = pa_csv.read_csv(path, convert_options=options)
        else:
            # JSON: an explicit schema adds every column it names, so name only the file's
            names = pa_json.read_json(path).column_names
            explicit = pa.schema([target.field(n) for n in names if n in target.names])
            options = pa_json.ParseOptions(explicit_schema=explicit)
            rows = pa_json.read_json(path, parse_options=options)
    except _ARROW_ERRORS as exc:
        raise ValidationError(f"--from {path}: not readable as {fmt}: {_first_line(exc)}") from None
    return _with_table_types(rows, target, path)


def _with_table_types(rows: pa.Table, target: pa.Schema, path: str) -> pa.Table:
    for index, name in enumerate(rows.column_names):
        if name not in target.names:
            continue
        field = target.field(name)
        column = rows.column(index)
        if column.type == field.type:
            continue
        try:
            cast = pc.cast(column, field.type)
        except _ARROW_ERRORS as exc:
            raise SchemaMismatch(
                f"--from {path}: column {name!r} of type {column.type} does not fit the "
                f"table's {field.type}: {_first_line(exc)}"
            ) from None
        rows = rows.set_column(index, pa.field(name, field.type, metadata=field.metadata), cast)
    return rows


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
