package lakecat.spark;

import java.io.IOException;
import java.util.Collections;
import java.util.Iterator;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.ProjectingInternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.FilePartition;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Spark's Parquet readers with the rows that position deletes and deletion vectors delete left
 * out: each file of a {@link FilePartition} is read on its own (so that its rows are known to be
 * its own), its rows numbered by Spark's row index column, and a row whose index is among the
 * file's deleted positions (sorted, read by lakecat on the driver) is skipped. Output column
 * {@code i} is the delegate's column {@code order[i]}, which leaves out the row index when the
 * query did not ask for {@code _pos}. Column batches stay column batches: a batch holding no
 * deleted row passes as it is, one holding some becomes {@link RemappedColumnVector} views of
 * its kept rows (nothing copied); a delegate that reads rows gives rows. Runs on executors.
 */
final class DeletingReaders implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;

  private final PartitionReaderFactory delegate;
  private final int[] order;
  private final StructType schema; // the delegate's columns, in the delegate's order
  private final int rowIndex; // the delegate's ordinal of the row index
  private final Map<String, long[]> deleted; // by the file's URI, as the partitions name it

  DeletingReaders(
      PartitionReaderFactory delegate,
      int[] order,
      StructType schema,
      int rowIndex,
      Map<String, long[]> deleted) {
    this.delegate = delegate;
    this.order = order;
    this.schema = schema;
    this.rowIndex = rowIndex;
    this.deleted = deleted;
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return delegate.supportColumnarReads(partition);
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    return new BatchReader((FilePartition) partition);
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    return new Reader((FilePartition) partition, ReorderedReaders.projection(order, schema));
  }

  /** The batches of one partition's files, one file after the other, deleted rows left out. */
  private final class BatchReader implements PartitionReader<ColumnarBatch> {
    private final FilePartition partition;
    private int file = -1;
    private PartitionReader<ColumnarBatch> batches; // the open file's
    private long[] positions; // its deleted positions (null: none)
    private int cursor; // the first deleted position not below the rows seen
    private ColumnarBatch current;

    BatchReader(FilePartition partition) {
      this.partition = partition;
    }

    @Override
    public boolean next() throws IOException {
      while (true) {
        if (batches != null && batches.next()) {
          current = kept(batches.get());
          if (current != null) {
            return true;
          }
        } else {
          closeFile();
          PartitionedFile[] all = partition.files();
          if (++file >= all.length) {
            return false;
          }
          PartitionedFile one = all[file];
          positions = deleted.get(one.urlEncodedPath());
          cursor = 0;
          batches =
              delegate.createColumnarReader(
                  new FilePartition(partition.index(), new PartitionedFile[] {one}));
        }
      }
    }

    /** The batch's kept rows in the output's columns; null when none is kept. */
    private ColumnarBatch kept(ColumnarBatch batch) {
      int n = batch.numRows();
      int[] rows = null;
      int count = n;
      if (positions != null && n > 0) {
        ColumnVector index = batch.column(rowIndex);
        while (cursor < positions.length && positions[cursor] < index.getLong(0)) {
          cursor++; // row indexes rise within a file split and a batch
        }
        if (cursor < positions.length && positions[cursor] <= index.getLong(n - 1)) {
          rows = new int[n];
          count = 0;
          for (int i = 0; i < n; i++) {
            long position = index.getLong(i);
            while (cursor < positions.length && positions[cursor] < position) {
              cursor++;
            }
            if (cursor < positions.length && positions[cursor] == position) {
              continue;
            }
            rows[count++] = i;
          }
        }
      }
      if (count == 0 && n > 0) {
        return null;
      }
      ColumnVector[] columns = new ColumnVector[order.length];
      for (int i = 0; i < order.length; i++) {
        ColumnVector column = batch.column(order[i]);
        columns[i] = rows == null ? column : new RemappedColumnVector(column, rows, count);
      }
      return new ColumnarBatch(columns, count);
    }

    @Override
    public ColumnarBatch get() {
      return current;
    }

    private void closeFile() throws IOException {
      if (batches != null) {
        PartitionReader<ColumnarBatch> open = batches;
        batches = null;
        open.close();
      }
    }

    @Override
    public void close() throws IOException {
      closeFile();
    }
  }

  /** The rows of one partition's files, one file after the other, deleted rows skipped. */
  private final class Reader implements PartitionReader<InternalRow> {
    private final FilePartition partition;
    private final ProjectingInternalRow row;
    private int file = -1;
    private PartitionReader<ColumnarBatch> batches; // the file's, when read as columns
    private PartitionReader<InternalRow> rows; // the file's, when read as rows
    private Iterator<InternalRow> batch = Collections.emptyIterator();
    private long[] positions; // the file's deleted positions (null: none)
    private int cursor; // the first deleted position not below the rows seen

    Reader(FilePartition partition, ProjectingInternalRow row) {
      this.partition = partition;
      this.row = row;
    }

    @Override
    public boolean next() throws IOException {
      while (true) {
        InternalRow next = nextOfFile();
        if (next != null) {
          if (!isDeleted(next.getLong(rowIndex))) {
            row.project(next);
            return true;
          }
        } else if (!openNextFile()) {
          return false;
        }
      }
    }

    /** The current file's next row, or null when it has no more (or no file is open). */
    private InternalRow nextOfFile() throws IOException {
      if (rows != null) {
        return rows.next() ? rows.get() : null;
      }
      while (!batch.hasNext()) {
        if (batches == null || !batches.next()) {
          return null;
        }
        batch = batches.get().rowIterator();
      }
      return batch.next();
    }

    private boolean isDeleted(long position) {
      if (positions == null) {
        return false;
      }
      while (cursor < positions.length && positions[cursor] < position) {
        cursor++; // row indexes rise within a split
      }
      return cursor < positions.length && positions[cursor] == position;
    }

    private boolean openNextFile() throws IOException {
      close();
      PartitionedFile[] all = partition.files();
      if (++file >= all.length) {
        return false;
      }
      PartitionedFile one = all[file];
      FilePartition single = new FilePartition(partition.index(), new PartitionedFile[] {one});
      positions = deleted.get(one.urlEncodedPath());
      cursor = 0;
      if (delegate.supportColumnarReads(single)) {
        batches = delegate.createColumnarReader(single);
      } else {
        rows = delegate.createReader(single);
      }
      return true;
    }

    @Override
    public InternalRow get() {
      return row;
    }

    @Override
    public void close() throws IOException {
      batch = Collections.emptyIterator();
      try {
        if (batches != null) {
          batches.close();
        }
        if (rows != null) {
          rows.close();
        }
      } finally {
        batches = null;
        rows = null;
      }
    }
  }
}
