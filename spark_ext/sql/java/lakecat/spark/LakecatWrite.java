package lakecat.spark;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;

/**
 * The Python data source's write, unchanged, except that a lakecat error its Python writer raises
 * on the driver (planning the write, committing it) reaches the user as a {@link
 * LakecatException} ({@code lakecat ConcurrentAppend: ...}) instead of Spark's {@code
 * PYTHON_DATA_SOURCE_ERROR} with the Python traceback in its first line; and that Spark spreads
 * its rows over tasks as the table's {@code write.distribution-mode} asks ({@link
 * WriteRequirements}) first.
 */
final class LakecatWrite implements Write, WriteRequirements.Spread {
  private final BridgeClient table; // translates the Python writer's failures
  private final Write delegate;
  private final WriteRequirements requirements;

  LakecatWrite(BridgeClient bridge, Write delegate, WriteRequirements requirements) {
    this.table = bridge;
    this.delegate = delegate;
    this.requirements = requirements;
  }

  @Override
  public WriteRequirements requirements() {
    return requirements;
  }

  @Override
  public String description() {
    return delegate.description();
  }

  @Override
  public BatchWrite toBatch() {
    try {
      return new TranslatingBatch(table, delegate.toBatch());
    } catch (Exception e) {
      throw BridgeClient.rethrow(table.translate(e));
    }
  }

  @Override
  public StreamingWrite toStreaming() {
    return delegate.toStreaming();
  }

  @Override
  public CustomMetric[] supportedCustomMetrics() {
    return delegate.supportedCustomMetrics();
  }

  @Override
  public CustomTaskMetric[] reportDriverMetrics() {
    return delegate.reportDriverMetrics();
  }

  @Override
  public String toString() {
    return delegate.toString();
  }
}
