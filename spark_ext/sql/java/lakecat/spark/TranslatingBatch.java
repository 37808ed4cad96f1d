package lakecat.spark;

import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.WriteSummary;

/**
 * A Python data source's batch write, unchanged, except that a lakecat error its Python writer
 * raises on the driver reaches the user as a {@link LakecatException} (see {@link
 * LakecatWrite}).
 */
class TranslatingBatch implements BatchWrite {
  final BridgeClient bridge;
  final BatchWrite batch;

  TranslatingBatch(BridgeClient bridge, BatchWrite batch) {
    this.bridge = bridge;
    this.batch = batch;
  }

  @Override
  public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
    try {
      return batch.createBatchWriterFactory(info);
    } catch (Exception e) {
      throw BridgeClient.rethrow(bridge.translate(e));
    }
  }

  @Override
  public boolean useCommitCoordinator() {
    return batch.useCommitCoordinator();
  }

  @Override
  public void onDataWriterCommit(WriterCommitMessage message) {
    batch.onDataWriterCommit(message);
  }

  @Override
  public void commit(WriterCommitMessage[] messages) {
    try {
      batch.commit(messages);
    } catch (Exception e) {
      throw BridgeClient.rethrow(bridge.translate(e));
    }
  }

  @Override
  public void commit(WriterCommitMessage[] messages, WriteSummary summary) {
    try {
      batch.commit(messages, summary);
    } catch (Exception e) {
      throw BridgeClient.rethrow(bridge.translate(e));
    }
  }

  @Override
  public void abort(WriterCommitMessage[] messages) {
    try {
      batch.abort(messages);
    } catch (Exception e) {
      throw BridgeClient.rethrow(bridge.translate(e));
    }
  }
}
