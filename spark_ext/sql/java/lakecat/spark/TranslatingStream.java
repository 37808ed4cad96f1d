package lakecat.spark;

import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;

/**
 * The Python data source's stream of a lakecat table (which takes rate limits and {@code
 * Trigger.AvailableNow}), unchanged, except that a lakecat error its Python reader raises on
 * the driver (planning a micro-batch, checking an offset) reaches the user as a {@link
 * LakecatException} whose first line names the error, as batch reads and writes do.
 */
final class TranslatingStream implements MicroBatchStream, SupportsTriggerAvailableNow {
  private final BridgeClient bridge;
  private final MicroBatchStream stream;
  private final SupportsTriggerAvailableNow limited;

  private TranslatingStream(BridgeClient bridge, MicroBatchStream stream) {
    this.bridge = bridge;
    this.stream = stream;
    this.limited = (SupportsTriggerAvailableNow) stream;
  }

  /** {@code stream} wrapped, when it is the kind lakecat's reader makes; else as it is. */
  static MicroBatchStream of(BridgeClient bridge, MicroBatchStream stream) {
    return stream instanceof SupportsTriggerAvailableNow
        ? new TranslatingStream(bridge, stream)
        : stream;
  }

  private RuntimeException translated(Exception e) {
    return BridgeClient.rethrow(bridge.translate(e));
  }

  @Override
  public Offset initialOffset() {
    try {
      return stream.initialOffset();
    } catch (Exception e) {
      throw translated(e);
    }
  }

  @Override
  public Offset deserializeOffset(String json) {
    try {
      return stream.deserializeOffset(json);
    } catch (Exception e) {
      throw translated(e);
    }
  }

  @Override
  public Offset latestOffset() {
    try {
      return stream.latestOffset();
    } catch (Exception e) {
      throw translated(e);
    }
  }

  @Override
  public Offset latestOffset(Offset start, ReadLimit limit) {
    try {
      return limited.latestOffset(start, limit);
    } catch (Exception e) {
      throw translated(e);
    }
  }

  @Override
  public ReadLimit getDefaultReadLimit() {
    return limited.getDefaultReadLimit();
  }

  @Override
  public Offset reportLatestOffset() {
    return limited.reportLatestOffset();
  }

  @Override
  public void prepareForTriggerAvailableNow() {
    try {
      limited.prepareForTriggerAvailableNow();
    } catch (Exception e) {
      throw translated(e);
    }
  }

  @Override
  public InputPartition[] planInputPartitions(Offset start, Offset end) {
    try {
      return stream.planInputPartitions(start, end);
    } catch (Exception e) {
      throw translated(e);
    }
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return stream.createReaderFactory();
  }

  @Override
  public void commit(Offset end) {
    try {
      stream.commit(end);
    } catch (Exception e) {
      throw translated(e);
    }
  }

  @Override
  public void stop() {
    stream.stop();
  }
}
