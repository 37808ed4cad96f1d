"""Parse SQL-WHERE-like row filters into expressions.

Grammar (keywords are case-insensitive)::

    expr       := or_expr
    or_expr    := and_expr ("OR" and_expr)*
    and_expr   := not_expr ("AND" not_expr)*
    not_expr   := "NOT" not_expr | primary
    primary    := "(" expr ")" | "TRUE" | "FALSE" | predicate
    predicate  := column cmp literal | literal cmp column
                | column ["NOT"] "IN" "(" literal ("," literal)* ")"
                | column "IS" ["NOT"] ("NULL" | "NAN")
                | column ["NOT"] "LIKE" string          -- 'prefix%' or an exact string
                | column ["NOT"] "BETWEEN" literal "AND" literal
    cmp        := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
    column     := part ("." part)*    part: identifier, `back quoted` or "double quoted"
    literal    := 'string' | ["-"] number | "TRUE" | "FALSE"
                | DATE 'yyyy-mm-dd' | TIMESTAMP '...' | TIME '...' | X'hex'

Numbers with a decimal point are exact ``Decimal`` (so decimal columns compare exactly; binding
turns them into floats for float columns); numbers with an exponent are floats. In LIKE
patterns, ``\\`` escapes ``%``, ``_`` and itself. ``NULL`` is only accepted in ``IS [NOT] NULL``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, NoReturn

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions.expressions import (
    FLIPPED,
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThanOrEqual,
    Not,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Operation,
    Or,
    StartsWith,
    predicate,
)

_COMPARISONS = {
    "=": Operation.EQ,
    "==": Operation.EQ,
    "!=": Operation.NOT_EQ,
    "<>": Operation.NOT_EQ,
    "<": Operation.LT,
    "<=": Operation.LT_EQ,
    ">": Operation.GT,
    ">=": Operation.GT_EQ,
}
_TYPED_LITERALS = ("date", "timestamp", "time")


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "ident", "qident", "string", "number", "hex", "op", "eof"
    text: str  # for ident: as written; for qident/string: unquoted; for op: the symbol
    pos: int
    value: Any = None

    def is_word(self, *words: str) -> bool:
        return self.kind == "ident" and self.text.lower() in words

    def describe(self) -> str:
        if self.kind == "eof":
            return "end of input"
        if self.kind == "string":
            return f"string '{self.text}'"
        return repr(self.text)


def parse(text: str, *, double_quoted_strings: bool = False) -> Expression:
    """Parse a row filter such as ``"date < '2024-01-01' AND id IN (1, 2)"``.

    ``double_quoted_strings``: ``"..."`` is a string, as Spark SQL reads it by default
    (``spark.sql.ansi.doubleQuotedIdentifiers`` off; Iceberg's procedures document
    ``where => 'name = "foo"'``), instead of a column name as in standard SQL; back quotes
    still quote a column name.

    Raises :class:`ValidationError` naming the position and what was expected.
    """
    if not isinstance(text, str):
        raise ValidationError(f"a row filter must be a string, not {type(text).__name__}")
    return _Parser(text, double_quoted_strings).parse()


class _Parser:
    def __init__(self, text: str, double_quoted_strings: bool = False) -> None:
        self.text = text
        self.tokens = _tokenize(text, double_quoted_strings)
        self.i = 0

    # ---- helpers ------------------------------------------------------------------------
    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def peek(self, ahead: int = 1) -> _Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        tok = self.tokens[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def fail(self, expected: str, tok: _Token | None = None) -> NoReturn:
        raise _error(
            self.text,
            (tok or self.tok).pos,
            f"expected {expected}, found {(tok or self.tok).describe()}",
        )

    def expect_word(self, word: str) -> None:
        if not self.tok.is_word(word):
            self.fail(word.upper())
        self.advance()

    def expect_op(self, symbol: str) -> None:
        if not (self.tok.kind == "op" and self.tok.text == symbol):
            self.fail(f"'{symbol}'")
        self.advance()

    # ---- grammar ------------------------------------------------------------------------
    def parse(self) -> Expression:
        if self.tok.kind == "eof":
            self.fail("a filter expression")
        expr = self.or_expr()
        if self.tok.kind != "eof":
            self.fail("AND, OR or end of input")
        return expr

    def or_expr(self) -> Expression:
        expr = self.and_expr()
        while self.tok.is_word("or"):
            self.advance()
            expr = Or(expr, self.and_expr())
        return expr

    def and_expr(self) -> Expression:
        expr = self.not_expr()
        while self.tok.is_word("and"):
            self.advance()
            expr = And(expr, self.not_expr())
        return expr

    def not_expr(self) -> Expression:
        if self.tok.is_word("not"):
            self.advance()
            return Not(self.not_expr())
        return self.primary()

    def primary(self) -> Expression:
        tok = self.tok
        if tok.kind == "op" and tok.text == "(":
            self.advance()
            expr = self.or_expr()
            self.expect_op(")")
            return expr
        if tok.is_word("true", "false") and not self._is_comparison(self.peek()):
            self.advance()
            return AlwaysTrue() if tok.text.lower() == "true" else AlwaysFalse()
        if self._starts_literal():
            return self.literal_first_comparison()
        return self.predicate()

    @staticmethod
    def _is_comparison(tok: _Token) -> bool:
        return tok.kind == "op" and tok.text in _COMPARISONS

    def _starts_literal(self) -> bool:
        tok = self.tok
        if tok.kind in ("string", "number", "hex"):
            return True
        if tok.kind == "op" and tok.text == "-":
            return True
        if tok.is_word("true", "false"):
            return True
        return tok.is_word(*_TYPED_LITERALS) and self.peek().kind == "string"

    def literal_first_comparison(self) -> Expression:
        value = self.literal()
        op_tok = self.tok
        if not self._is_comparison(op_tok):
            self.fail("a comparison operator (=, !=, <>, <, <=, >, >=) after a literal")
        self.advance()
        name = self.column()
        return predicate(FLIPPED[_COMPARISONS[op_tok.text]], name, value)

    def predicate(self) -> Expression:
        name = self.column()
        tok = self.tok
        if self._is_comparison(tok):
            self.advance()
            if self.tok.is_word("null"):
                raise _error(
                    self.text,
                    self.tok.pos,
                    "comparison with NULL is never true: use IS NULL or IS NOT NULL",
                )
            if not self._starts_literal():
                self.fail("a literal value (columns can only be compared with literals)")
            return predicate(_COMPARISONS[tok.text], name, self.literal())
        if tok.is_word("is"):
            self.advance()
            negate = False
            if self.tok.is_word("not"):
                self.advance()
                negate = True
            if self.tok.is_word("null"):
                self.advance()
                return NotNull(name) if negate else IsNull(name)
            if self.tok.is_word("nan"):
                self.advance()
                return NotNaN(name) if negate else IsNaN(name)
            self.fail("NULL or NAN after IS" + (" NOT" if negate else ""))
        negate = False
        if tok.is_word("not"):
            self.advance()
            negate = True
        if self.tok.is_word("in"):
            self.advance()
            values = self.value_list()
            return NotIn(name, values) if negate else In(name, values)
        if self.tok.is_word("like"):
            self.advance()
            return self.like(name, negate)
        if self.tok.is_word("between"):
            self.advance()
            low = self.literal()
            self.expect_word("and")
            high = self.literal()
            expr: Expression = And(GreaterThanOrEqual(name, low), LessThanOrEqual(name, high))
            return Not(expr) if negate else expr
        if negate:
            self.fail("IN, LIKE or BETWEEN after NOT")
        self.fail(f"a comparison operator, IN, IS, LIKE or BETWEEN after column {name!r}", self.tok)

    def value_list(self) -> frozenset[Any]:
        self.expect_op("(")
        values = [self.literal()]
        while self.tok.kind == "op" and self.tok.text == ",":
            self.advance()
            values.append(self.literal())
        self.expect_op(")")
        return frozenset(values)

    def like(self, name: str, negate: bool) -> Expression:
        tok = self.tok
        if tok.kind != "string":
            self.fail("a quoted LIKE pattern")
        self.advance()
        prefix, wildcard = _like_prefix(self.text, tok)
        if not wildcard:
            return predicate(Operation.NOT_EQ if negate else Operation.EQ, name, prefix)
        return NotStartsWith(name, prefix) if negate else StartsWith(name, prefix)

    def column(self) -> str:
        parts = [self.column_part()]
        while self.tok.kind == "op" and self.tok.text == ".":
            self.advance()
            parts.append(self.column_part())
        return ".".join(parts)

    def column_part(self) -> str:
        tok = self.tok
        if tok.kind == "qident":
            self.advance()
            return tok.text
        if tok.kind == "ident":
            if tok.text.lower() in _KEYWORDS_NOT_NAMES:
                self.fail(f"a column name (quote {tok.text!r} with backquotes to use it as one)")
            self.advance()
            return tok.text
        self.fail("a column name")

    def literal(self) -> Any:
        tok = self.tok
        if tok.kind == "string":
            self.advance()
            return tok.text
        if tok.kind == "hex":
            self.advance()
            return tok.value
        if tok.kind == "number":
            self.advance()
            return tok.value
        if tok.kind == "op" and tok.text == "-":
            self.advance()
            num = self.tok
            if num.kind != "number":
                self.fail("a number after '-'")
            self.advance()
            value = num.value
            # copy_negate, not unary minus: that rounds to the context's 28 digits
            return value.copy_negate() if isinstance(value, Decimal) else -value
        if tok.is_word("true", "false"):
            self.advance()
            return tok.text.lower() == "true"
        if tok.is_word("null"):
            raise _error(self.text, tok.pos, "NULL is only allowed in IS NULL / IS NOT NULL")
        if tok.is_word(*_TYPED_LITERALS) and self.peek().kind == "string":
            self.advance()
            return _typed_literal(self.text, tok.text.lower(), self.advance())
        self.fail("a literal (a 'string', a number, true, false, DATE '...' or TIMESTAMP '...')")


_KEYWORDS_NOT_NAMES = frozenset(
    {"and", "or", "not", "in", "is", "null", "true", "false", "like", "between"}
)


def _error(text: str, pos: int, message: str) -> ValidationError:
    line = text.replace("\n", " ").replace("\t", " ")
    return ValidationError(f"{message} at position {pos} in row filter:\n  {line}\n  {' ' * pos}^")


def _like_prefix(text: str, tok: _Token) -> tuple[str, bool]:
    """The literal prefix of a LIKE pattern and whether it ended with the '%' wildcard."""
    out: list[str] = []
    pattern = tok.text
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= len(pattern):
                raise _error(text, tok.pos, "LIKE pattern ends with a lone escape '\\'")
            out.append(pattern[i + 1])
            i += 2
            continue
        if ch == "%":
            if i != len(pattern) - 1:
                raise _error(
                    text,
                    tok.pos,
                    "only prefix patterns ('abc%') are supported in LIKE; '%' must come last "
                    "(escape a literal '%' as '\\%')",
                )
            return "".join(out), True
        if ch == "_":
            raise _error(
                text,
                tok.pos,
                "only prefix patterns ('abc%') are supported in LIKE; '_' is not "
                "(escape a literal '_' as '\\_')",
            )
        out.append(ch)
        i += 1
    return "".join(out), False


def _typed_literal(text: str, kind: str, tok: _Token) -> Any:
    raw = tok.text.strip()
    try:
        if kind == "date":
            return dt.date.fromisoformat(raw)
        if kind == "time":
            return dt.time.fromisoformat(raw)
        return dt.datetime.fromisoformat(raw.replace("Z", "+00:00") if raw.endswith("Z") else raw)
    except ValueError:
        expected = {
            "date": "'YYYY-MM-DD'",
            "time": "'HH:MM:SS[.ffffff]'",
            "timestamp": "'YYYY-MM-DD HH:MM:SS[.ffffff][+HH:MM]'",
        }[kind]
        raise _error(
            text, tok.pos, f"invalid {kind.upper()} literal '{tok.text}', expected {expected}"
        ) from None


# ---- tokenizer ----------------------------------------------------------------------------

_TWO_CHAR_OPS = ("<=", ">=", "<>", "!=", "==")
_ONE_CHAR_OPS = "=<>(),.-"


def _tokenize(text: str, double_quoted_strings: bool = False) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch in ("x", "X") and i + 1 < n and text[i + 1] == "'":
            end, body = _quoted(text, i + 1, "'")
            try:
                value = bytes.fromhex(body)
            except ValueError:
                raise _error(text, i, f"invalid hex literal X'{body}'") from None
            tokens.append(_Token("hex", body, i, value))
            i = end
            continue
        if ch == "'" or (ch == '"' and double_quoted_strings):
            end, body = _quoted(text, i, ch)
            tokens.append(_Token("string", body, i))
            i = end
            continue
        if ch in ('"', "`"):
            end, body = _quoted(text, i, ch)
            if not body:
                raise _error(text, i, "empty quoted column name")
            tokens.append(_Token("qident", body, i))
            i = end
            continue
        if ch.isdigit() or (
            ch == "." and i + 1 < n and text[i + 1].isdigit() and not _after_name(tokens)
        ):
            end, value = _number(text, i)
            tokens.append(_Token("number", text[i:end], i, value))
            i = end
            continue
        if ch.isalpha() or ch == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            tokens.append(_Token("ident", text[i:j], i))
            i = j
            continue
        two = text[i : i + 2]
        if two in _TWO_CHAR_OPS:
            tokens.append(_Token("op", two, i))
            i += 2
            continue
        if ch in _ONE_CHAR_OPS:
            tokens.append(_Token("op", ch, i))
            i += 1
            continue
        raise _error(text, i, f"unexpected character {ch!r}")
    tokens.append(_Token("eof", "", n))
    return tokens


def _after_name(tokens: list[_Token]) -> bool:
    # "a.5" style names do not exist, but "t.`x`" does: a '.' right after a name is a separator.
    return bool(tokens) and tokens[-1].kind in ("ident", "qident")


def _quoted(text: str, start: int, quote: str) -> tuple[int, str]:
    """Read a quoted token starting at ``start``; a doubled quote stands for itself."""
    out: list[str] = []
    i = start + 1
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == quote:
            if i + 1 < n and text[i + 1] == quote:
                out.append(quote)
                i += 2
                continue
            return i + 1, "".join(out)
        out.append(ch)
        i += 1
    raise _error(text, start, f"unterminated quoted text (missing closing {quote})")


def _number(text: str, start: int) -> tuple[int, Any]:
    i = start
    n = len(text)
    while i < n and text[i].isdigit():
        i += 1
    has_point = i < n and text[i] == "."
    if has_point:
        i += 1
        while i < n and text[i].isdigit():
            i += 1
    has_exp = i < n and text[i] in "eE"
    if has_exp:
        j = i + 1
        if j < n and text[j] in "+-":
            j += 1
        if j >= n or not text[j].isdigit():
            raise _error(text, start, f"malformed number {text[start:j]!r}")
        while j < n and text[j].isdigit():
            j += 1
        i = j
    if i < n and (text[i].isalpha() or text[i] == "_"):
        raise _error(text, start, f"malformed number {text[start : i + 1]!r}")
    literal = text[start:i]
    if has_exp:
        return i, float(literal)
    if has_point:
        return i, Decimal(literal)
    return i, int(literal)
