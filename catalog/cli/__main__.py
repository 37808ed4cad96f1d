"""``python -m lakecat.catalog.cli``: the same as the ``lakecat`` command."""

from lakecat.catalog.cli.entry import main

raise SystemExit(main())
