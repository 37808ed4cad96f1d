package lakecat.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.ProjectingInternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.FilePartition;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark's Parquet readers with the rows that position deletes and deletion vectors delete left
 * out: each file of a {@link FilePartition} is read on its own (so that its rows are known to be
 * its own), its rows numbered by Spark's row index column, and a row whose index is among the
 * file's deleted positions (sorted, read by lakecat on the driver) is skipped. Rows come out as
 * rows (a column batch cannot drop rows without a copy), projected to the scan's columns:
 * output column {@code i} is the delegate's column {@code order[i]}, which leaves out the row
 * index when the query did not ask for {@code _pos}. Runs on executors.
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
    return false;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    FilePartition files = (FilePartition) partition;
    List<Object> ordinals = new ArrayList<>();
    StructType projected = new StructType();
    for (int index : order) {
      ordinals.add(index);
      projected = projected.add(schema.fields()[index]);
    }
    ProjectingInternalRow row =
        ProjectingInternalRow.apply(projected, CollectionConverters.asScala(ordinals).toSeq());
    return new Reader(files, row);
  }

  /** The rows of one partition's files, one file after the other, deleted rows skipped. */
  private final class Reader implements PartitionReader<InternalRow> {
    private final FilePartition partition;
    private final ProjectingInternalRow row;
    private int file = -1;
    private PartitionReader<ColumnarBatch> batches; // the file's, when read as columns
    private PartitionReader<InternalRow> rows; // the file's, when read as rows
    private Iterator<InternalRow> batch = java.util.Collections.emptyIterator();
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
      batch = java.util.Collections.emptyIterator();
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
