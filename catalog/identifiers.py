"""Namespace and table identifiers, validated once at the catalog's edge.

An identifier is a tuple of non-empty string parts: a namespace is one or more parts
(``("db",)``, ``("a", "b")``), a table is a namespace plus a name. A string is read the way
Iceberg's JDBC catalog and pyiceberg read it: split on dots, so ``"a.b.events"`` is the table
``events`` in the namespace ``("a", "b")``.

The JDBC catalog stores a nested namespace as its parts joined with dots (``"a.b"``), so a part
that itself contains a dot could not be told apart from two parts; such parts are refused even
when given as a tuple element. Parts that could escape a warehouse folder when used as path
segments (``/``, ``\\``, ``.``, ``..``), empty parts and control characters are refused too, as
are encodings longer than the catalog tables' ``VARCHAR(255)`` columns. Every refusal raises
:class:`~lakecat.metadata.errors.InvalidIdentifier` before anything is read or written.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from lakecat.metadata.errors import InvalidIdentifier

__all__ = [
    "MAX_ENCODED_LENGTH",
    "Identifier",
    "namespace_from_string",
    "namespace_to_string",
    "parse_namespace",
    "parse_table_identifier",
    "table_identifier_to_string",
    "validate_name",
]

Identifier = tuple[str, ...]

# The JDBC catalog's table_namespace, namespace and table_name columns are VARCHAR(255).
MAX_ENCODED_LENGTH = 255

_SEPARATOR = "."
_FORBIDDEN_CHARACTERS = ("/", "\\")
_FORBIDDEN_PARTS = (".", "..")
# Cc: C0/C1 control characters and DEL (NUL included); Cs: lone surrogates, which no database
# driver can encode.
_FORBIDDEN_CATEGORIES = ("Cc", "Cs")


def validate_name(part: str) -> str:
    """Return ``part`` if it is acceptable as one identifier part, else raise InvalidIdentifier.

    A single part is a table name or one level of a namespace.
    """
    if not isinstance(part, str):
        raise InvalidIdentifier(f"identifier parts must be strings, got {part!r}")
    if not part:
        raise InvalidIdentifier("identifier parts must not be empty")
    if part in _FORBIDDEN_PARTS:
        raise InvalidIdentifier(f"identifier part {part!r} is not allowed")
    if _SEPARATOR in part:
        raise InvalidIdentifier(
            f"identifier part {part!r} contains '.', which joins namespace levels in the catalog"
        )
    for character in _FORBIDDEN_CHARACTERS:
        if character in part:
            raise InvalidIdentifier(f"identifier part {part!r} contains a path separator")
    if any(unicodedata.category(ch) in _FORBIDDEN_CATEGORIES for ch in part):
        raise InvalidIdentifier(f"identifier part {part!r} contains a control character")
    if len(part) > MAX_ENCODED_LENGTH:
        raise InvalidIdentifier(
            f"identifier part is {len(part)} characters long; the limit is {MAX_ENCODED_LENGTH}"
        )
    return part


def _split(identifier: str | Sequence[str], *, what: str) -> Identifier:
    if isinstance(identifier, str):
        if not identifier:
            raise InvalidIdentifier(f"{what} must not be empty")
        # Checked here as well as per part so that a bad character is reported as such rather
        # than as the empty part that splitting may produce around it.
        if any(unicodedata.category(ch) in _FORBIDDEN_CATEGORIES for ch in identifier):
            raise InvalidIdentifier(f"{what} {identifier!r} contains a control character")
        parts: Identifier = tuple(identifier.split(_SEPARATOR))
    elif isinstance(identifier, Sequence):
        parts = tuple(identifier)
    else:
        raise InvalidIdentifier(f"{what} must be a string or a sequence of strings: {identifier!r}")
    if not parts:
        raise InvalidIdentifier(f"{what} must have at least one part")
    for part in parts:
        validate_name(part)
    return parts


def parse_namespace(namespace: str | Sequence[str]) -> Identifier:
    """Parse and validate a namespace: ``"a.b"`` or ``("a", "b")`` -> ``("a", "b")``."""
    parts = _split(namespace, what="namespace")
    encoded_length = len(_SEPARATOR.join(parts))
    if encoded_length > MAX_ENCODED_LENGTH:
        raise InvalidIdentifier(
            f"namespace {parts!r} is {encoded_length} characters long when joined with dots; "
            f"the limit is {MAX_ENCODED_LENGTH}"
        )
    return parts


def parse_table_identifier(identifier: str | Sequence[str]) -> tuple[Identifier, str]:
    """Split a table identifier into ``(namespace, name)``.

    ``"db.events"`` -> ``(("db",), "events")``; ``("a", "b", "t")`` -> ``(("a", "b"), "t")``.
    A bare name without a namespace is refused.
    """
    parts = _split(identifier, what="table identifier")
    if len(parts) < 2:
        raise InvalidIdentifier(
            f"table identifier {identifier!r} has no namespace; write it as 'namespace.table'"
        )
    return parse_namespace(parts[:-1]), parts[-1]


def namespace_to_string(namespace: str | Sequence[str]) -> str:
    """Encode a namespace the way the JDBC catalog stores it: parts joined with dots."""
    return _SEPARATOR.join(parse_namespace(namespace))


def table_identifier_to_string(namespace: str | Sequence[str], name: str) -> str:
    """Render ``namespace`` and ``name`` as one dotted string, for messages and logs."""
    return f"{namespace_to_string(namespace)}{_SEPARATOR}{validate_name(name)}"


def namespace_from_string(encoded: str) -> Identifier:
    """Decode a namespace column value as stored by the JDBC catalog (no validation).

    Rows may have been written by other implementations, so nothing is refused here; callers
    that hand the result back to lakecat will validate it then.
    """
    return tuple(encoded.split(_SEPARATOR))
