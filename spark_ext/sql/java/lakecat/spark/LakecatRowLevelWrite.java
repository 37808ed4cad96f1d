package lakecat.spark;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation.Command;
import org.apache.spark.sql.connector.write.V1Write;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteSummary;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.sources.InsertableRelation;

/**
 * The write of a copy-on-write row-level operation: the Python data source writes the new
 * files in staging mode (its commit hands their list over in {@code stage-to} instead of
 * committing), then one bridge call commits them in place of the files the scan read.
 *
 * <p>Once that call is made, the job's files belong to it: a commit that failed for sure
 * deletes them in Python, and a commit whose outcome is unknown must keep them (it may have
 * landed), so Spark's abort after a failed commit deletes nothing.
 *
 * <p>Spark spreads the rows over tasks first as {@code write.<command>.distribution-mode} asks
 * ({@link WriteRequirements}; a {@code DELETE}'s or {@code UPDATE}'s rows of an unpartitioned
 * table by their file under {@code hash}), for either writer.
 */
final class LakecatRowLevelWrite implements Write, WriteRequirements.Spread {
  private final LakecatTable table;
  private final Write delegate;
  private final Command command;
  private final LakecatScan.RowLevel scan; // null: Spark optimized the read away
  private final String stageTo;
  private final ChunkedWriterFactory.Layout layout;
  private final Map<String, String> options; // the staged write's options
  private final WriteRequirements requirements;

  LakecatRowLevelWrite(
      LakecatTable table,
      Write delegate,
      Command command,
      LakecatScan.RowLevel scan,
      String stageTo,
      ChunkedWriterFactory.Layout layout,
      Map<String, String> options) {
    this.table = table;
    this.layout = layout;
    this.delegate = delegate;
    this.command = command;
    this.scan = scan;
    this.stageTo = stageTo;
    this.options = options;
    this.requirements =
        WriteRequirements.of(
            table, command.name().toLowerCase(Locale.ROOT), command != Command.MERGE);
  }

  @Override
  public WriteRequirements requirements() {
    return requirements;
  }

  LakecatTable table() {
    return table;
  }

  LakecatScan.RowLevel scan() {
    return scan;
  }

  /**
   * The same write as Spark's V1 fallback: the bridge's {@code insert} stages the DataFrame's
   * rows (Spark's Parquet writer when the write qualifies, else the Python data source), then
   * one bridge call commits the staged files in place of the files the scan read. A failed
   * write deletes its own files; once the commit call is made it owns the staged files.
   *
   * <p>{@code groupFilters} are the queries of Spark's runtime filter on the scan's {@code
   * _file} (each gives the files holding affected rows), taken out of the rows' plan by {@link
   * NativeRowLevelWrites}: Spark would drop them when it plans the DataFrame again, so they are
   * run here first and narrow the scan's files, as Spark's runtime filter would. {@code
   * rowsOnlyFromScan}: a {@code MERGE} without a {@code WHEN NOT MATCHED} clause, whose rows
   * all come from the files read.
   */
  V1Write nativeWrite(
      SparkSession session, List<LogicalPlan> groupFilters, boolean rowsOnlyFromScan) {
    return new V1Write() {
      @Override
      public String description() {
        return LakecatRowLevelWrite.this.description() + " (Spark's Parquet writer)";
      }

      @Override
      public InsertableRelation toInsertableRelation() {
        return (Dataset<Row> data, boolean ignored) -> {
          for (LogicalPlan files : groupFilters) { // before Spark plans the rows' read
            Set<String> chosen = new HashSet<>();
            List<Row> answer =
                org.apache.spark.sql.classic.Dataset.ofRows(session, files).collectAsList();
            for (Row row : answer) {
              chosen.add(row.getString(0));
            }
            scan.keep(chosen);
          }
          if (!nothingToWrite()) {
            ObjectNode args = table.identifierArgs();
            args.set("options", Names.object(options));
            args.put("overwrite", false);
            table.bridge().insert(args, data);
          }
          table
              .bridge()
              .call("commit_row_level", table.rowLevelCommitArgs(command, scan, stageTo));
        };
      }

      /**
       * Whether the statement's rows are known to be none once the runtime filter ran: an
       * {@code UPDATE}'s, a {@code DELETE}'s or an insert-free {@code MERGE}'s rows all come
       * from the files read ({@code rowsOnlyFromScan}), and none is left to read. Spark would
       * still run a job for the empty write.
       */
      private boolean nothingToWrite() {
        boolean fromScan = command != Command.MERGE || rowsOnlyFromScan;
        return fromScan && scan != null && scan.files().isEmpty();
      }

      /** What EXPLAIN shows: the write, and the read Spark plans under it when it runs. */
      @Override
      public String toString() {
        String narrowed =
            groupFilters.isEmpty() ? "" : ", its files narrowed at run time by Spark's _file filter";
        String read = scan == null ? "nothing" : scan.description();
        return description() + ", reading " + read + narrowed;
      }
    };
  }

  @Override
  public String description() {
    return "lakecat copy-on-write " + command + " of " + table.name();
  }

  @Override
  public BatchWrite toBatch() {
    return new Batch(table.batchOf(delegate));
  }

  private final class Batch extends TranslatingBatch {
    private boolean committing;

    Batch(BatchWrite batch) {
      super(table.bridge(), batch);
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      return new ChunkedWriterFactory(super.createBatchWriterFactory(info), layout);
    }

    @Override
    public void onDataWriterCommit(WriterCommitMessage message) {
      for (WriterCommitMessage inner :
          ChunkedWriterFactory.Messages.unpack(new WriterCommitMessage[] {message})) {
        super.onDataWriterCommit(inner);
      }
    }

    @Override
    public void commit(WriterCommitMessage[] messages, WriteSummary summary) {
      commit(messages);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
      super.commit(ChunkedWriterFactory.Messages.unpack(messages)); // stages: no commit yet
      committing = true;
      table.bridge().call("commit_row_level", table.rowLevelCommitArgs(command, scan, stageTo));
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
      if (!committing) { // else the commit call owns the files (see the class comment)
        super.abort(ChunkedWriterFactory.Messages.unpack(messages));
      }
    }
  }
}
