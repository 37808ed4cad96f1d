"""lakecat's SQL catalog and Python table API.

>>> from lakecat.catalog import Catalog
>>> catalog = Catalog.embedded("lake")            # SQLite file + local warehouse
>>> catalog.create_namespace("db")
>>> table = catalog.create_table("db.events", arrow_schema, partition_by=[("ts", "day")])
>>> table.append(arrow_table)
>>> table.to_arrow("region = 'eu'", as_of="2024-01-01T00:00:00")
"""

from lakecat.catalog.catalog import Catalog
from lakecat.catalog.commit.pipeline import CommitResult
from lakecat.catalog.table import Table
from lakecat.catalog.views import View

__all__ = ["Catalog", "CommitResult", "Table", "View"]
