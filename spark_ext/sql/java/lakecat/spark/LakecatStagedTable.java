package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;

/**
 * The table of a {@code CREATE TABLE AS SELECT}, {@code REPLACE TABLE [AS SELECT]} or {@code
 * CREATE OR REPLACE TABLE} before it exists in the catalog (Spark's {@link StagedTable}): Spark
 * writes the statement's rows into it through the Python data source, spread over tasks as the
 * new definition's distribution mode asks ({@link WriteRequirements}), which stages the files
 * against the new definition, then commits it (one lakecat commit: the new definition and rows
 * replace the old ones, or the table is created) or aborts it (the staged files are deleted and
 * the catalog never changed). See {@code spark_ext/sql/staging.py}.
 */
final class LakecatStagedTable extends DescribedTable implements StagedTable, SupportsWrite {
  // Spark wrote a query's rows (AS SELECT): the commit makes a snapshot of them, none maybe
  private volatile boolean written;

  LakecatStagedTable(BridgeClient bridge, JsonNode descriptor) {
    super(bridge, descriptor);
  }

  @Override
  public Set<TableCapability> capabilities() {
    // Spark writes a replace's rows as an overwrite of everything (truncate): the staged table
    // holds nothing but them anyway, so the write stays a staged append.
    return EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.TRUNCATE);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    written = true;
    SupportsWrite delegate = (SupportsWrite) delegate();
    Map<String, String> options = new HashMap<>(info.options().asCaseSensitiveMap());
    options.putAll(Names.map(descriptor.get("write_options")));
    WriteBuilder builder =
        delegate.newWriteBuilder(new LakecatWriteBuilder.Info(info, options, info.schema()));
    // the new definition's write.distribution-mode (Spark 3.5 and later honour the
    // RequiresDistributionAndOrdering of a CTAS's or RTAS's write); a mode that is not one is
    // refused here, before any row is written, and Spark aborts the stage
    WriteRequirements requirements = WriteRequirements.of(this, "write", false);
    return new SupportsTruncate() {
      @Override
      public WriteBuilder truncate() {
        return this;
      }

      @Override
      public Write build() {
        return new LakecatWrite(bridge, builder.build(), requirements);
      }
    };
  }

  @Override
  public void commitStagedChanges() {
    ObjectNode args = stageArgs();
    args.put("with_rows", written);
    bridge.call("commit_staged", args);
  }

  @Override
  public void abortStagedChanges() {
    bridge.call("abort_staged", stageArgs());
  }

  private ObjectNode stageArgs() {
    ObjectNode args = bridge.args();
    args.put("stage_id", descriptor.get("stage_id").asText());
    return args;
  }

}
