package lakecat.spark;

import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation.Command;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteSummary;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * The write of a copy-on-write row-level operation: the Python data source writes the new
 * files in staging mode (its commit hands their list over in {@code stage-to} instead of
 * committing), then one bridge call commits them in place of the files the scan read.
 *
 * <p>Once that call is made, the job's files belong to it: a commit that failed for sure
 * deletes them in Python, and a commit whose outcome is unknown must keep them (it may have
 * landed), so Spark's abort after a failed commit deletes nothing.
 */
final class LakecatRowLevelWrite implements Write {
  private final LakecatTable table;
  private final Write delegate;
  private final Command command;
  private final LakecatScan.RowLevel scan;
  private final String stageTo;
  private final ChunkedWriterFactory.Layout layout;

  LakecatRowLevelWrite(
      LakecatTable table,
      Write delegate,
      Command command,
      LakecatScan.RowLevel scan,
      String stageTo,
      ChunkedWriterFactory.Layout layout) {
    this.table = table;
    this.layout = layout;
    this.delegate = delegate;
    this.command = command;
    this.scan = scan;
    this.stageTo = stageTo;
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
