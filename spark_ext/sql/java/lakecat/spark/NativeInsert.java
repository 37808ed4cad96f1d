package lakecat.spark;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.connector.write.V1Write;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.sources.InsertableRelation;

/**
 * A batch {@code INSERT INTO}, {@code INSERT OVERWRITE} (whole table, or the rows a filter
 * matches) or {@code df.writeTo(...).append()/overwrite(...)} into a catalog table, written as
 * {@code lakecat.spark_ext.write} writes a DataFrame: Spark hands the statement's rows to {@link
 * #toInsertableRelation()} as a DataFrame (its V1 write fallback, {@code AppendDataExecV1} /
 * {@code OverwriteByExpressionExecV1}), and the bridge's {@code insert} writes it with Spark's
 * own Parquet writer when the write qualifies, else through the Python data source with the
 * same options; either way one lakecat commit with the write's conflict checks. So is a
 * dynamic partition overwrite that {@link NativeDynamicOverwrites} made an append; one Spark
 * plans as such, and a streaming write, keep the Python data source's write ({@link
 * LakecatWrite}).
 *
 * <p>The table's {@code write.distribution-mode}: a streaming write's rows are spread over tasks
 * by Spark as {@link #requiredDistribution()} asks ({@link WriteRequirements}). A batch write's
 * are not: Spark's V1 fallback runs the statement's analyzed query, without the distribution
 * its optimizer added, so the bridge's write spreads them (as {@code lk.write} does).
 */
final class NativeInsert implements V1Write, WriteRequirements.Spread {
  private static final String DYNAMIC_KEY = "overwrite-mode"; // the data source's option
  private final LakecatTable table;
  private final Map<String, String> options;
  private final boolean overwrite;
  private final Supplier<Write> streaming; // the data source's write, for a streaming query
  private final WriteRequirements requirements;

  NativeInsert(
      LakecatTable table,
      Map<String, String> options,
      boolean overwrite,
      Supplier<Write> streaming) {
    this.table = table;
    this.options = options;
    this.overwrite = overwrite;
    this.streaming = streaming;
    this.requirements = WriteRequirements.of(table, "write", false);
  }

  @Override
  public WriteRequirements requirements() {
    return requirements;
  }

  @Override
  public String description() {
    String kind =
        !overwrite
            ? "append "
            : "dynamic".equals(options.get(DYNAMIC_KEY)) ? "dynamic overwrite " : "overwrite ";
    return "lakecat " + kind + table.name();
  }

  @Override
  public InsertableRelation toInsertableRelation() {
    return (Dataset<Row> data, boolean ignored) -> {
      // Spark passes overwrite=false to a V1 write whatever the statement: the builder knows
      ObjectNode args = table.identifierArgs();
      args.set("options", Names.object(options));
      args.put("overwrite", overwrite);
      table.bridge().insert(args, data);
    };
  }

  @Override
  public StreamingWrite toStreaming() {
    return streaming.get().toStreaming();
  }

  @Override
  public String toString() {
    return description();
  }
}
