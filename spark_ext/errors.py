"""lakecat errors under Spark: one readable line for the user, the typed error back for code.

A lakecat error raised while Spark runs a statement reaches the user through the JVM. Through
the SQL catalog (statements, ``df.writeTo(...)``, ``CALL``) it arrives as the plugin's
``LakecatException``, an ``AnalysisException`` whose message is one line,
``lakecat <ErrorType>: <message>``; an error a lakecat data source raised in a Python worker
(planning or committing a write) is rewritten to that shape by the plugin, which asks the bridge
to find the error in the worker's traceback (:func:`error_in_traceback`).

:func:`lakecat_error` turns the exception Spark raised back into the typed lakecat error: from
the ``LakecatException``'s fields (its Python class, message and attributes) when the JVM
exception chain holds one, else from the traceback text of a Python worker's failure (Spark's
``PYTHON_DATA_SOURCE_ERROR``, or the ``PythonException`` of a failed task), which names the
error's class on its last line. :func:`lakecat_errors` does that to whatever a block raises.

A Python data source's stream reader plans on the driver in a Python worker, and Spark reports
its failure (``PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR``, wrapped in the query's
``StreamingQueryException``) as its own prefix and the worker's traceback, which would put the
error's line many lines down; :func:`error_headline` makes that report open with it.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from py4j.protocol import Py4JError

from lakecat.metadata.errors import LakecatError

LAKECAT_EXCEPTION_CLASS = "lakecat.spark.LakecatException"
PYTHON_DATA_SOURCE_ERROR = "PYTHON_DATA_SOURCE_ERROR"
PYTHON_STREAMING_DATA_SOURCE_ERROR = "PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR"
# Spark's conditions whose "msg" parameter is a Python worker's traceback
_WORKER_CONDITIONS = (PYTHON_DATA_SOURCE_ERROR, PYTHON_STREAMING_DATA_SOURCE_ERROR)
# The exception line of a Python traceback: a lakecat class's qualified name, then the message.
_EXCEPTION_LINE = re.compile(r"^(lakecat(?:\.\w+)+)(?:: ?(.*))?$")
_FRAME_LINE = '  File "'
_MAX_CAUSES = 32


def error_class_name(cls: type[BaseException]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def error_attributes(error: BaseException) -> dict[str, Any]:
    """The attributes of an error that survive JSON (a conflict's snapshot id, partitions...)."""
    out: dict[str, Any] = {}
    for key, value in vars(error).items():
        if key.startswith("_"):
            continue
        if isinstance(value, (tuple, list)) and all(_plain(v) for v in value):
            out[key] = list(value)
        elif _plain(value):
            out[key] = value
    return out


def _plain(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def lakecat_error(exc: BaseException) -> LakecatError | None:
    """The typed lakecat error behind an exception raised by Spark, or ``None`` if there is
    none. A lakecat error is returned as it is; one rebuilt from Spark's exception has that
    exception as its ``__cause__``."""
    if isinstance(exc, LakecatError):
        return exc
    for throwable in _java_chain(exc):
        if throwable.getClass().getName() == LAKECAT_EXCEPTION_CLASS:
            return _rebuild(
                str(throwable.errorClassName()),
                str(throwable.errorMessage()),
                json.loads(str(throwable.attributesJson()) or "{}"),
                cause=exc,
            )
    for text in _texts(exc):
        error = error_in_traceback(text)
        if error is not None:
            error.__cause__ = exc
            return error
    return None


@contextmanager
def lakecat_errors() -> Iterator[None]:
    """Raise the typed lakecat error behind a Spark exception the block raises::

        with lk.lakecat_errors():
            spark.sql("DELETE FROM lake.db.events WHERE day = '2024-06-01'")
        # raises lakecat's ConcurrentAppend (a CommitConflict), not AnalysisException

    Exceptions with no lakecat error behind them go through unchanged.
    """
    try:
        yield
    except Exception as exc:
        error = lakecat_error(exc)
        if error is None or error is exc:
            raise
        raise error from exc


@contextmanager
def error_headline() -> Iterator[None]:
    """Raise a lakecat error the block raises so that its traceback, as Python formats it,
    opens with the error's line (``lakecat.metadata.errors.ValidationError: <message>``).

    The error is raised from a copy of itself that has no traceback, which Python prints first,
    before "The above exception was the direct cause..." and the traceback: where Spark shows a
    Python worker's traceback after its own prefix (a stream reader's failure), the first line
    names the error. The traceback still ends with the error itself, as
    :func:`error_in_traceback` reads it; a cause the error had is kept as a note.
    """
    try:
        yield
    except LakecatError as error:
        cause = error.__cause__
        if cause is not None:
            error.add_note(f"caused by {error_class_name(type(cause))}: {cause}")
        headline = type(error).__new__(type(error))
        LakecatError.__init__(headline, *error.args)
        raise error from headline


def error_in_traceback(text: str) -> LakecatError | None:
    """The lakecat error whose Python traceback (as a Python worker reports it) is ``text``:
    the exception line after the last frame names the class, the rest is the message."""
    lines = text.splitlines()
    start = 0
    for index, line in enumerate(lines):
        if line.startswith(_FRAME_LINE):
            start = index + 1
    while start < len(lines) and lines[start].startswith("    "):  # the frame's source lines
        start += 1
    match = _EXCEPTION_LINE.match(lines[start]) if start < len(lines) else None
    if match is None:
        return None
    message = "\n".join([match.group(2) or "", *lines[start + 1 :]]).rstrip()
    return _rebuild(match.group(1), message, {}, cause=None)


def _rebuild(
    class_name: str, message: str, attributes: dict[str, Any], *, cause: BaseException | None
) -> LakecatError | None:
    cls = _error_class(class_name)
    if cls is None:
        return None
    # Not cls(message): some errors take keyword-only attributes, restored below instead.
    error = cls.__new__(cls)
    LakecatError.__init__(error, message)
    for key, value in attributes.items():
        setattr(error, key, tuple(value) if isinstance(value, list) else value)
    error.__cause__ = cause
    return error


def _error_class(qualified: str) -> type[LakecatError] | None:
    """The LakecatError subclass of this qualified name (only lakecat's modules are looked in)."""
    module_name, _, name = qualified.rpartition(".")
    if not module_name.startswith("lakecat."):
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    cls = getattr(module, name, None)
    if isinstance(cls, type) and issubclass(cls, LakecatError):
        return cls
    return None


def _java_chain(exc: BaseException) -> Iterator[Any]:
    """The JVM throwable behind a PySpark or Py4J exception, and its causes."""
    throwable = getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)
    for _ in range(_MAX_CAUSES):
        if throwable is None:
            return
        yield throwable
        throwable = throwable.getCause()


def _texts(exc: BaseException) -> Iterator[str]:
    """Where a Python worker's traceback may be: the JVM exceptions' Python data source
    messages and messages, else (no JVM: Spark Connect) the exception's own text."""
    chain = list(_java_chain(exc))
    # the worker's own text first: a streaming query's message adds lines after it
    for throwable in chain:
        if _condition(throwable) in _WORKER_CONDITIONS:
            yield str(throwable.getMessageParameters().get("msg") or "")
    for throwable in chain:
        message = throwable.getMessage()
        if message is not None:
            yield str(message)
    if not chain:
        current: BaseException | None = exc
        for _ in range(_MAX_CAUSES):
            if current is None:
                return
            yield str(current)
            current = current.__cause__ or current.__context__


def _condition(throwable: Any) -> str | None:
    try:
        condition = throwable.getCondition()
    except Py4JError:  # not a SparkThrowable: no such method
        return None
    return None if condition is None else str(condition)
