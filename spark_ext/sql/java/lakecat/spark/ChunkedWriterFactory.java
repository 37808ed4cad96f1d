package lakecat.spark;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Lets Spark push rows one at a time into the Python data source's writer, which only takes a
 * whole iterator ({@code writeAll}; its {@code write(row)} drops the row). Spark's row-level
 * writes ({@code ReplaceData}) push rows with {@code write(metadata, row)}: each task's rows are
 * gathered as compact {@link UnsafeRow}s up to {@link #CHUNK_BYTES} and handed to a new Python
 * writer as one iterator, which writes them as files and returns its commit message. The task's
 * message carries the messages of all its chunks ({@link Messages}); the batch write unpacks
 * them before the Python commit. Memory per task stays at one chunk. With row lineage each row
 * is joined with its {@code _row_id} and {@code _last_updated_sequence_number} from Spark's
 * metadata row ({@link Layout}).
 */
final class ChunkedWriterFactory implements DataWriterFactory {
  static final long CHUNK_BYTES = 64L * 1024 * 1024;

  private final DataWriterFactory delegate;
  private final Layout layout;

  ChunkedWriterFactory(DataWriterFactory delegate, Layout layout) {
    this.delegate = delegate;
    this.layout = layout;
  }

  /**
   * The rows the Python writer takes: the data columns, then the metadata columns at {@code
   * lineage} (indexes into Spark's metadata rows: the row lineage columns), null for a row
   * without metadata (an inserted row).
   */
  static final class Layout implements Serializable {
    final StructType written;
    final StructType metadata;
    final int[] lineage;

    Layout(StructType written, StructType metadata, List<Integer> lineage) {
      this.written = written;
      this.metadata = metadata;
      this.lineage = lineage.stream().mapToInt(Integer::intValue).toArray();
    }

    int dataColumns() {
      return written.size() - lineage.length;
    }
  }

  @Override
  public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
    return new Writer(partitionId, taskId);
  }

  /** The commit messages of one task's chunks. */
  static final class Messages implements WriterCommitMessage {
    final WriterCommitMessage[] messages;

    Messages(WriterCommitMessage[] messages) {
      this.messages = messages;
    }

    /** Spark's messages with every task's chunk messages in its place. */
    static WriterCommitMessage[] unpack(WriterCommitMessage[] messages) {
      List<WriterCommitMessage> out = new ArrayList<>();
      for (WriterCommitMessage message : messages) {
        if (message instanceof Messages) {
          for (WriterCommitMessage inner : ((Messages) message).messages) {
            out.add(inner);
          }
        } else {
          out.add(message);
        }
      }
      return out.toArray(new WriterCommitMessage[0]);
    }
  }

  private final class Writer implements DataWriter<InternalRow> {
    private final int partitionId;
    private final long taskId;
    private final UnsafeProjection toUnsafe = UnsafeProjection.create(layout.written);
    private final GenericInternalRow joined = new GenericInternalRow(layout.written.size());
    private final List<InternalRow> chunk = new ArrayList<>();
    private final List<WriterCommitMessage> written = new ArrayList<>();
    private long bytes;

    Writer(int partitionId, long taskId) {
      this.partitionId = partitionId;
      this.taskId = taskId;
    }

    @Override
    public void write(InternalRow row) throws IOException {
      add(row, null);
    }

    @Override
    public void write(InternalRow metadata, InternalRow row) throws IOException {
      add(row, metadata);
    }

    private void add(InternalRow row, InternalRow metadata) throws IOException {
      InternalRow whole = row;
      if (layout.lineage.length > 0) {
        int data = layout.dataColumns();
        StructField[] fields = layout.written.fields();
        for (int i = 0; i < data; i++) {
          joined.update(i, row.isNullAt(i) ? null : row.get(i, fields[i].dataType()));
        }
        for (int j = 0; j < layout.lineage.length; j++) {
          int at = layout.lineage[j];
          boolean absent = metadata == null || metadata.isNullAt(at);
          joined.update(data + j, absent ? null : metadata.getLong(at));
        }
        whole = joined;
      }
      UnsafeRow copy = toUnsafe.apply(whole).copy();
      chunk.add(copy);
      bytes += copy.getSizeInBytes();
      if (bytes >= CHUNK_BYTES) {
        flush();
      }
    }

    private void flush() throws IOException {
      if (chunk.isEmpty()) {
        return;
      }
      DataWriter<InternalRow> writer = delegate.createWriter(partitionId, taskId);
      try {
        writer.writeAll(chunk.iterator());
        written.add(writer.commit());
      } catch (IOException | RuntimeException e) {
        writer.abort();
        throw e;
      } finally {
        writer.close();
      }
      chunk.clear();
      bytes = 0;
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
      flush();
      return new Messages(written.toArray(new WriterCommitMessage[0]));
    }

    @Override
    public void abort() {
      // Files of chunks already written are in the Python job's journal, which the job's
      // commit or abort cleans up.
      chunk.clear();
    }

    @Override
    public void close() {
      chunk.clear();
    }
  }
}
