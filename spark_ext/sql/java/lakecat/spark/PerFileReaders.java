package lakecat.spark;

import java.io.IOException;
import java.io.Serializable;
import java.util.Arrays;
import java.util.Map;
import java.util.stream.IntStream;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.ProjectingInternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.FilePartition;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Spark's Parquet readers with what lakecat knows of each file applied: each file of a {@link
 * FilePartition} is read on its own (so that its rows are known to be its own), its rows
 * numbered by Spark's row index column, and
 *
 * <ul>
 *   <li>a row whose index is among the file's deleted positions (position deletes and deletion
 *       vectors, sorted, read by lakecat on the driver) is skipped;
 *   <li>the row lineage columns of a format v3 table, as the file stores them (null where it
 *       holds none), get their nulls assigned as the spec says: {@code _row_id} = the file's
 *       {@code first_row_id} + the row's index, {@code _last_updated_sequence_number} = the
 *       file's data sequence number (neither for a file without a first row id).
 * </ul>
 *
 * Output column {@code i} is the delegate's column {@code order[i]}, which leaves out the row
 * index when the query did not ask for {@code _pos}. Column batches stay column batches: a
 * batch holding no deleted row passes as it is; in one holding some, {@link KeptRows} moves the
 * kept rows to the front inside the reader's own vectors (nothing allocated), or, for vectors it
 * cannot move, the columns become {@link RemappedColumnVector} views of the kept rows. Lineage
 * columns become {@link LineageColumnVector}s. A delegate that reads rows gives rows. Runs on
 * executors.
 *
 * <p>Why move rather than view: Spark compiles one class per DataSource V2 scan query shape and
 * calls the abstract {@code ColumnVector} from it; views reaching that class made its later runs,
 * on tables without deletes too, cost about 1.5x the CPU, and copying the kept rows into new
 * vectors slowed every later scan. Moving left both unchanged (2026-12-03, docs/benchmarks.md).
 */
final class PerFileReaders implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;

  /** What lakecat knows of one data file's rows. */
  static final class FileRows implements Serializable {
    private static final long serialVersionUID = 1L;

    final long[] deleted; // sorted deleted positions; null: none
    final Long firstRowId; // row lineage; null: the file has none
    final Long sequenceNumber;

    FileRows(long[] deleted, Long firstRowId, Long sequenceNumber) {
      this.deleted = deleted;
      this.firstRowId = firstRowId;
      this.sequenceNumber = sequenceNumber;
    }
  }

  private static final FileRows NOTHING = new FileRows(null, null, null);

  private final PartitionReaderFactory delegate;
  private final int[] order;
  private final StructType schema; // the delegate's columns, in the delegate's order
  private final int rowIndex; // the delegate's ordinal of the row index (-1: not read)
  private final int rowIdOut; // the output's ordinal of _row_id (-1: not read)
  private final int sequenceOut; // ... of _last_updated_sequence_number
  private final Map<String, FileRows> files; // by the file's URI, as the partitions name it
  private final int[] moved; // the delegate's columns the output reads (KeptRows moves their rows)
  private final boolean moveKeptRows; // false: views of the kept rows

  PerFileReaders(
      PartitionReaderFactory delegate,
      int[] order,
      StructType schema,
      int rowIndex,
      int rowIdOut,
      int sequenceOut,
      Map<String, FileRows> files,
      boolean moveKeptRows) {
    this.delegate = delegate;
    this.order = order;
    this.schema = schema;
    this.rowIndex = rowIndex;
    this.rowIdOut = rowIdOut;
    this.sequenceOut = sequenceOut;
    this.files = files;
    IntStream rowIds = rowIdOut >= 0 && rowIndex >= 0 ? IntStream.of(rowIndex) : IntStream.empty();
    this.moved = IntStream.concat(Arrays.stream(order), rowIds).distinct().toArray();
    this.moveKeptRows = moveKeptRows;
  }

  /**
   * {@value #MOVE_KEPT_ROWS}: true (the default) moves a batch's kept rows inside the reader's
   * vectors ({@link KeptRows}); false gives views of them ({@link RemappedColumnVector}), as
   * for vectors {@link KeptRows} cannot move. For comparing the two (docs/benchmarks.md).
   */
  static final String MOVE_KEPT_ROWS = "spark.lakecat.moveKeptRows";

  /** Whether the session's reads move kept rows ({@link #MOVE_KEPT_ROWS}). */
  static boolean movesKeptRows(org.apache.spark.sql.internal.SQLConf conf) {
    return !"false".equalsIgnoreCase(conf.getConfString(MOVE_KEPT_ROWS, "true").trim());
  }

  private FileRows rowsOf(PartitionedFile file) {
    return files.getOrDefault(file.urlEncodedPath(), NOTHING);
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

  /** The first index of {@code positions} at or after {@code cursor} not below {@code row}. */
  private static int seek(long[] positions, int cursor, long row) {
    while (cursor < positions.length && positions[cursor] < row) {
      cursor++; // row indexes rise within a file split and a batch
    }
    return cursor;
  }

  /** The batches of one partition's files, one file after the other, deleted rows left out. */
  private final class BatchReader implements PartitionReader<ColumnarBatch> {
    private final FilePartition partition;
    private int file = -1;
    private PartitionReader<ColumnarBatch> batches; // the open file's
    private FileRows known = NOTHING; // its rows' deletes and lineage
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
          known = rowsOf(one);
          cursor = 0;
          batches =
              delegate.createColumnarReader(
                  new FilePartition(partition.index(), new PartitionedFile[] {one}));
        }
      }
    }

    /** Whether {@link KeptRows} can move the kept rows of every column in {@link #moved}. */
    private boolean movable(ColumnarBatch batch) {
      for (int ordinal : moved) {
        if (!KeptRows.movable(batch.column(ordinal))) {
          return false;
        }
      }
      return true;
    }

    /** The batch's kept rows in the output's columns; null when none is kept. */
    private ColumnarBatch kept(ColumnarBatch batch) {
      int n = batch.numRows();
      int[] rows = null;
      int count = n;
      long[] positions = known.deleted;
      if (positions != null && n > 0) {
        ColumnVector index = batch.column(rowIndex);
        cursor = seek(positions, cursor, index.getLong(0));
        if (cursor < positions.length && positions[cursor] <= index.getLong(n - 1)) {
          rows = new int[n];
          count = 0;
          for (int i = 0; i < n; i++) {
            long position = index.getLong(i);
            cursor = seek(positions, cursor, position);
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
      if (count == n) {
        rows = null; // the deleted positions in range fell between the batch's rows
      } else if (moveKeptRows && movable(batch)) {
        for (int ordinal : moved) {
          KeptRows.move(batch.column(ordinal), rows, count);
        }
        rows = null; // the kept rows come first now
      }
      ColumnVector[] columns = new ColumnVector[order.length];
      for (int i = 0; i < order.length; i++) {
        ColumnVector column = batch.column(order[i]);
        if (known.firstRowId != null && i == rowIdOut) {
          column = new LineageColumnVector(column, batch.column(rowIndex), known.firstRowId);
        } else if (known.firstRowId != null && known.sequenceNumber != null && i == sequenceOut) {
          column = new LineageColumnVector(column, null, known.sequenceNumber);
        }
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

  /**
   * The rows of one partition's files, one file after the other, deleted rows skipped (Spark
   * asks for rows only when the delegate reads no column batches).
   */
  private final class Reader implements PartitionReader<InternalRow> {
    private final FilePartition partition;
    private final ProjectingInternalRow row;
    private InternalRow current;
    private int file = -1;
    private PartitionReader<InternalRow> rows; // the open file's
    private FileRows known = NOTHING; // the file's deletes and lineage
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
          long position = rowIndex >= 0 ? next.getLong(rowIndex) : -1;
          if (!isDeleted(position)) {
            row.project(next);
            current = withLineage(row, position);
            return true;
          }
        } else if (!openNextFile()) {
          return false;
        }
      }
    }

    /** The row with its lineage columns' nulls assigned (a copy), or the row itself. */
    private InternalRow withLineage(InternalRow projected, long position) {
      Long first = known.firstRowId;
      boolean rowId = first != null && rowIdOut >= 0 && projected.isNullAt(rowIdOut);
      boolean sequence =
          first != null
              && known.sequenceNumber != null
              && sequenceOut >= 0
              && projected.isNullAt(sequenceOut);
      if (!rowId && !sequence) {
        return projected;
      }
      StructField[] fields = row.schema().fields();
      Object[] values = new Object[fields.length];
      for (int i = 0; i < fields.length; i++) {
        values[i] = projected.isNullAt(i) ? null : projected.get(i, fields[i].dataType());
      }
      InternalRow out = new GenericInternalRow(values);
      if (rowId) {
        out.setLong(rowIdOut, first + position);
      }
      if (sequence) {
        out.setLong(sequenceOut, known.sequenceNumber);
      }
      return out;
    }

    /** The current file's next row, or null when it has no more (or no file is open). */
    private InternalRow nextOfFile() throws IOException {
      return rows != null && rows.next() ? rows.get() : null;
    }

    private boolean isDeleted(long position) {
      long[] positions = known.deleted;
      if (positions == null) {
        return false;
      }
      cursor = seek(positions, cursor, position);
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
      known = rowsOf(one);
      cursor = 0;
      rows = delegate.createReader(single);
      return true;
    }

    @Override
    public InternalRow get() {
      return current;
    }

    @Override
    public void close() throws IOException {
      if (rows != null) {
        PartitionReader<InternalRow> open = rows;
        rows = null;
        open.close();
      }
    }
  }
}
