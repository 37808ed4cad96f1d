package lakecat.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import scala.Option;

/**
 * A dynamic partition overwrite of a lakecat table ({@code INSERT OVERWRITE} with {@code
 * spark.sql.sources.partitionOverwriteMode=dynamic}, {@code df.writeTo(t).overwritePartitions()})
 * written as {@code lk.write} writes one, with Spark's own Parquet writer where the write
 * qualifies: Spark plans such a write only as a V2 batch write ({@code
 * OverwritePartitionsDynamicExec}, every row through the Python data source), having no V1 form of
 * it. After analysis ({@code injectPostHocResolutionRule}) this rule turns the resolved statement
 * into Spark's {@code AppendData} of the same rows with the write option {@value #OPTION}
 * ({@link #TOKEN}), which
 * {@link LakecatWriteBuilder} builds as a {@link NativeInsert} that overwrites dynamically: Spark
 * runs it through its V1 fallback ({@code AppendDataExecV1}), as an {@code INSERT INTO}, and the
 * bridge writes the rows with the overwrite mode {@code dynamic} (the partitions the rows hold are
 * replaced, in one commit, with the write's conflict checks). Where the native write does not
 * qualify, the bridge hands the rows to the Python data source's dynamic overwrite, as before.
 * A dynamic overwrite with schema evolution ({@code mergeSchema}) stays the data source's, as do
 * all of a session that sets {@value #ENABLED} to {@code false}.
 */
final class NativeDynamicOverwrites extends Rule<LogicalPlan> {
  /** The write option that marks the rewritten statement (the builder takes it off). */
  static final String OPTION = "lakecat.dynamic-overwrite";
  /**
   * Its value: a token of this JVM, so that no write a user or another engine gives the option
   * becomes a dynamic overwrite (with another value the option stays, and the write is as given).
   */
  static final String TOKEN = java.util.UUID.randomUUID().toString();
  /** The session setting that turns the rule off ({@code false}). */
  static final String ENABLED = "spark.lakecat.nativeDynamicOverwrites";

  private final SparkSession session;

  NativeDynamicOverwrites(SparkSession session) {
    this.session = session;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!(plan instanceof OverwritePartitionsDynamic)
        || !plan.resolved()
        || "false".equalsIgnoreCase(session.conf().get(ENABLED, "true").trim())) {
      return plan;
    }
    OverwritePartitionsDynamic write = (OverwritePartitionsDynamic) plan;
    if (write.write().isDefined()
        || write.withSchemaEvolution() // (Spark's optimizer fails such an append: left alone)
        || !(write.table() instanceof DataSourceV2Relation)
        || !(((DataSourceV2Relation) write.table()).table() instanceof LakecatTable)) {
      return plan;
    }
    return new AppendData(
        write.table(),
        write.query(),
        write.writeOptions().updated(OPTION, TOKEN),
        write.isByName(),
        false,
        Option.empty(),
        Option.empty());
  }
}
