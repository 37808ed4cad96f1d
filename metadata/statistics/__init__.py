"""Table statistics: the column sketches Iceberg keeps in Puffin statistics files.

* :mod:`~lakecat.metadata.statistics.theta`: Apache DataSketches compact theta sketches (the
  ``apache-datasketches-theta-v1`` blob): their layout, and the distinct-value estimate (``ndv``)
  a blob records.

Pure functions over bytes; the Puffin container is :mod:`lakecat.metadata.deletes.puffin`.
"""

from lakecat.metadata.statistics.theta import (
    NDV_PROPERTY,
    THETA_BLOB_TYPE,
    ThetaSketch,
    ndv_blob,
    ndvs,
    parse_theta_sketch,
)

__all__ = [
    "NDV_PROPERTY",
    "THETA_BLOB_TYPE",
    "ThetaSketch",
    "ndv_blob",
    "ndvs",
    "parse_theta_sketch",
]
