package lakecat.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The read of a metadata table ({@code lake.db.t.files}): its Python data source's scan of
 * only the top-level columns the query uses (a nested one whole), so that the Python side
 * makes only those ({@code RowsPlan.pruned}: {@code readable_metrics}, decoded for every file,
 * is not made when it is not selected). Spark projects nested fields itself.
 */
final class MetadataScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns {
  private final LakecatTable table;
  private final CaseInsensitiveStringMap options;
  private StructType columns;

  MetadataScanBuilder(LakecatTable table, CaseInsensitiveStringMap options) {
    this.table = table;
    this.options = options;
    this.columns = table.schema();
  }

  @Override
  public void pruneColumns(StructType required) {
    Set<String> names = new HashSet<>(Arrays.asList(required.fieldNames()));
    List<StructField> kept = new ArrayList<>();
    for (StructField field : table.schema().fields()) {
      if (names.contains(field.name())) {
        kept.add(field);
      }
    }
    if (kept.isEmpty()) {
      // count(*): rows without columns carry no row count through a Python data source
      kept.add(table.schema().fields()[0]);
    }
    columns = new StructType(kept.toArray(new StructField[0]));
  }

  @Override
  public Scan build() {
    return table.delegateScan(columns, options);
  }
}
