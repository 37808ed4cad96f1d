"""The ``lakecat`` command line: :func:`main` (:mod:`~lakecat.catalog.cli.entry`) parses the
arguments (:mod:`.args`), opens the catalog (:mod:`.context`, :mod:`.config`), runs a command
(:mod:`.commands`, :mod:`.row_changes`, :mod:`.maintenance`; their arguments: :mod:`.schema`,
:mod:`.values`) and prints the result (:mod:`.render`).
"""

from lakecat.catalog.cli.entry import main

__all__ = ["main"]
