package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.types.AtomicType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The scan builder Spark's optimizer talks to: it keeps the filters Spark pushes (those lakecat
 * reads exactly become the read's file-pruning filter; Spark still evaluates on the rows every
 * filter that the pruning does not decide alone, so pruning can only skip files) and the
 * columns the query needs, and builds a
 * {@link LakecatScan} that reads them (through Spark's Parquet reader or the Python data
 * source). Each query gets its own
 * builder and scan, so no plan is reused between queries.
 */
final class LakecatScanBuilder implements SupportsPushDownV2Filters, SupportsPushDownRequiredColumns {
  private final LakecatTable table;
  private final Map<String, String> options;
  private final Consumer<LakecatScan.RowLevel> operation; // a row-level operation's; null: a read
  private StructType required;
  private Predicate[] pushed = new Predicate[0];
  private Predicate[] predicates = new Predicate[0];
  private String filter = "true";

  LakecatScanBuilder(
      LakecatTable table,
      Map<String, String> options,
      Consumer<LakecatScan.RowLevel> operation) {
    this.table = table;
    this.options = options;
    this.operation = operation;
    this.required = table.schema();
  }

  @Override
  public Predicate[] pushPredicates(Predicate[] predicates) {
    JsonNode answer = table.scanFilter(options, predicates);
    filter = answer.get("filter").asText();
    List<Predicate> used = new ArrayList<>();
    for (JsonNode index : answer.get("used")) {
      used.add(predicates[index.asInt()]);
    }
    pushed = used.toArray(new Predicate[0]);
    this.predicates = predicates;
    if (operation != null) {
      return predicates; // a row-level operation's read: Spark evaluates every filter on the rows
    }
    // A read: Spark evaluates on the rows every filter but those the pruning decides alone
    // (on identity partition columns under every spec, as Iceberg's runtime and Spark's own
    // partitioned Parquet do); lakecat prunes files (and Spark's Parquet reader row groups).
    boolean[] decided = new boolean[predicates.length];
    for (JsonNode index : answer.get("complete")) {
      decided[index.asInt()] = true;
    }
    List<Predicate> postScan = new ArrayList<>();
    for (int i = 0; i < predicates.length; i++) {
      if (!decided[i]) {
        postScan.add(predicates[i]);
      }
    }
    return postScan.toArray(new Predicate[0]);
  }

  @Override
  public Predicate[] pushedPredicates() {
    return pushed;
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    // A read of no column (count(*)), or of metadata columns only, still reads one: Arrow
    // batches without columns carry no row count through the Python data source.
    for (StructField field : requiredSchema.fields()) {
      if (!LakecatTable.METADATA_COLUMNS.contains(field.name())) {
        required = requiredSchema;
        return;
      }
    }
    StructType cheapest = cheapestColumn(table.schema());
    for (StructField field : requiredSchema.fields()) {
      cheapest = cheapest.add(field);
    }
    required = cheapest;
  }

  /** The first fixed-width column of the schema (else its first column) as a schema. */
  private static StructType cheapestColumn(StructType schema) {
    for (StructField field : schema.fields()) {
      if (field.dataType() instanceof AtomicType && field.dataType().defaultSize() <= 8) {
        return new StructType(new StructField[] {field});
      }
    }
    return schema.isEmpty() ? schema : new StructType(new StructField[] {schema.fields()[0]});
  }

  @Override
  public Scan build() {
    if (operation == null) {
      return new LakecatScan(table, options, required, filter, pushed, predicates);
    }
    LakecatScan.RowLevel scan =
        new LakecatScan.RowLevel(table, options, required, filter, pushed);
    operation.accept(scan);
    return scan;
  }
}
