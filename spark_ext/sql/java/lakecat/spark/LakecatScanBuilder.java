package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.Count;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.types.AtomicType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
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
final class LakecatScanBuilder
    implements SupportsPushDownV2Filters,
        SupportsPushDownRequiredColumns,
        SupportsPushDownAggregates {
  private final LakecatTable table;
  private final Map<String, String> options;
  private final Consumer<LakecatScan.RowLevel> operation; // a row-level operation's; null: a read
  private StructType required;
  private Predicate[] pushed = new Predicate[0];
  private Predicate[] predicates = new Predicate[0];
  private String filter = "true";
  private Scan aggregated; // the aggregates Spark pushed, answered from the files' metrics

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

  /** {@value #AGGREGATES}: true (the default) or false (Spark aggregates the rows read). */
  static final String AGGREGATES = "spark.lakecat.aggregatePushDown";

  /**
   * Answers Spark's aggregates from the metrics of the files the read plans, as Iceberg's
   * runtime does, when lakecat can ({@code spark_ext/sql/aggregates.py}): {@code count(*)},
   * {@code count(col)}, {@code min(col)} and {@code max(col)} of top-level columns, without
   * {@code GROUP BY}. Spark offers them only when no filter is left to evaluate on the rows.
   * The scan is then a local one of a single row: the query's result.
   */
  @Override
  public boolean pushAggregation(Aggregation aggregation) {
    if (operation != null
        || aggregation.groupByExpressions().length > 0
        || "false".equalsIgnoreCase(String.valueOf(LakecatTable.sessionConf(AGGREGATES)))) {
      return false;
    }
    ArrayNode asked = BridgeClient.JSON.createArrayNode();
    List<StructField> fields = new ArrayList<>();
    for (AggregateFunc function : aggregation.aggregateExpressions()) {
      ObjectNode one = asked.addObject();
      DataType type = DataTypes.LongType;
      String column = null;
      if (function instanceof CountStar) {
        one.put("op", "count_star");
      } else if (function instanceof Count && !((Count) function).isDistinct()) {
        one.put("op", "count");
        column = columnOf(((Count) function).column());
      } else if (function instanceof Min) {
        one.put("op", "min");
        column = columnOf(((Min) function).column());
      } else if (function instanceof Max) {
        one.put("op", "max");
        column = columnOf(((Max) function).column());
      } else {
        return false;
      }
      if (column != null) {
        one.put("column", column);
        if (!(function instanceof Count)) {
          type = table.schema().apply(column).dataType();
        }
      } else if (!(function instanceof CountStar)) {
        return false; // an expression, or a nested field
      }
      fields.add(DataTypes.createStructField(function.toString(), type, true));
    }
    JsonNode answer = table.aggregate(options, filter, asked);
    JsonNode values = answer.get("values");
    if (values == null || values.isNull()) {
      return false;
    }
    Object[] row = new Object[fields.size()];
    for (int i = 0; i < row.length; i++) {
      row[i] = SparkJson.internal(values.get(i), fields.get(i).dataType());
    }
    StructType schema = DataTypes.createStructType(fields);
    String description =
        "lakecat " + table.name() + " [aggregates from the metrics of "
            + answer.get("files").asLong() + " files, lakecat-filter=" + filter + "]";
    aggregated = new Aggregated(schema, new GenericInternalRow(row), description);
    return true;
  }

  /**
   * Whether the answer of {@link #pushAggregation} is the query's result itself: it always is
   * (one row of the final values), so Spark need not aggregate it again, nor run a job.
   */
  @Override
  public boolean supportCompletePushDown(Aggregation aggregation) {
    return aggregation.groupByExpressions().length == 0;
  }

  /** The top-level column an aggregate reads, null for an expression or a nested field. */
  private String columnOf(Expression expression) {
    if (!(expression instanceof NamedReference)) {
      return null;
    }
    String[] names = ((NamedReference) expression).fieldNames();
    if (names.length != 1 || !Arrays.asList(table.schema().fieldNames()).contains(names[0])) {
      return null;
    }
    return names[0];
  }

  /** The single row of aggregates a pushed aggregation reads. */
  private static final class Aggregated implements LocalScan {
    private final StructType schema;
    private final InternalRow row;
    private final String description;

    Aggregated(StructType schema, InternalRow row, String description) {
      this.schema = schema;
      this.row = row;
      this.description = description;
    }

    @Override
    public InternalRow[] rows() {
      return new InternalRow[] {row};
    }

    @Override
    public StructType readSchema() {
      return schema;
    }

    @Override
    public String description() {
      return description;
    }
  }

  @Override
  public Scan build() {
    if (aggregated != null) {
      return aggregated;
    }
    if (operation == null) {
      return new LakecatScan(table, options, required, filter, pushed, predicates);
    }
    LakecatScan.RowLevel scan =
        new LakecatScan.RowLevel(table, options, required, filter, pushed);
    operation.accept(scan);
    return scan;
  }
}
