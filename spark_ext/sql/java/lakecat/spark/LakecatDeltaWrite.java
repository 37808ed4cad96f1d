package lakecat.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.DeltaBatchWrite;
import org.apache.spark.sql.connector.write.DeltaWrite;
import org.apache.spark.sql.connector.write.DeltaWriter;
import org.apache.spark.sql.connector.write.DeltaWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation.Command;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteSummary;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.roaringbitmap.longlong.Roaring64NavigableMap;

/**
 * The write of a merge-on-read operation ({@link LakecatMergeOnRead}): each task collects the
 * positions of the rows it deletes or updates, by data file, and writes its new rows (updated
 * and inserted): with Spark's own Parquet writer when the bridge planned it ({@link
 * NativeRows}), else through the Python data source in staging mode, in chunks ({@link
 * ChunkedWriterFactory}). The driver hands the new files and every task's positions to one
 * bridge call, which writes the position delete files (v3: deletion vectors) and commits. As for
 * {@link LakecatRowLevelWrite}, once that call is made the job's files belong to it.
 */
final class LakecatDeltaWrite implements DeltaWrite, WriteRequirements.Spread {
  private final LakecatTable table;
  private final Write staged; // the Python data source's staged write; null: native rows
  private final NativeRows nativeRows; // null: staged rows
  private final Command command;
  private final LakecatScan.RowLevel scan; // null: Spark optimized the read away
  private final String stageTo;
  private final ChunkedWriterFactory.Layout layout;
  private final int fileOrdinal;
  private final int posOrdinal;
  private final WriteRequirements requirements;

  LakecatDeltaWrite(
      LakecatTable table,
      Write staged,
      NativeRows nativeRows,
      Command command,
      LakecatScan.RowLevel scan,
      String stageTo,
      ChunkedWriterFactory.Layout layout,
      int fileOrdinal,
      int posOrdinal) {
    this.table = table;
    this.staged = staged;
    this.nativeRows = nativeRows;
    this.command = command;
    this.scan = scan;
    this.stageTo = stageTo;
    this.layout = layout;
    this.fileOrdinal = fileOrdinal;
    this.posOrdinal = posOrdinal;
    // the rows of an UPDATE or MERGE spread as write.<command>.distribution-mode asks; a
    // DELETE writes no rows (its positions go to the driver)
    this.requirements =
        command == Command.DELETE
            ? WriteRequirements.NONE
            : WriteRequirements.delta(table, command.name().toLowerCase(Locale.ROOT));
  }

  @Override
  public WriteRequirements requirements() {
    return requirements;
  }

  @Override
  public String description() {
    return "lakecat merge-on-read "
        + command
        + " of "
        + table.name()
        + (nativeRows != null && command != Command.DELETE
            ? " [rows written by Spark's Parquet writer]"
            : "");
  }

  @Override
  public String toString() {
    return description();
  }

  @Override
  public DeltaBatchWrite toBatch() {
    return new Batch(
        staged == null ? null : new TranslatingBatch(table.bridge(), table.batchOf(staged)));
  }

  /**
   * One task's new rows (their chunks' messages, or its native files) and deleted positions: a
   * 64-bit Roaring bitmap per data file, in the portable format (compact for the runs of
   * positions a statement usually deletes, sorted and deduplicated).
   */
  static final class Deltas implements WriterCommitMessage {
    final WriterCommitMessage rows;
    final HashMap<String, byte[]> deletes;

    Deltas(WriterCommitMessage rows, HashMap<String, byte[]> deletes) {
      this.rows = rows;
      this.deletes = deletes;
    }
  }

  private static WriterCommitMessage[] rowMessages(WriterCommitMessage[] messages) {
    List<WriterCommitMessage> rows = new ArrayList<>();
    for (WriterCommitMessage message : messages) {
      if (message instanceof Deltas) {
        rows.add(((Deltas) message).rows);
      }
    }
    return ChunkedWriterFactory.Messages.unpack(rows.toArray(new WriterCommitMessage[0]));
  }

  private final class Batch implements DeltaBatchWrite {
    private final TranslatingBatch rows; // null: the tasks write their rows natively
    private boolean committing;

    Batch(TranslatingBatch rows) {
      this.rows = rows;
    }

    @Override
    public DeltaWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      DataWriterFactory staging =
          rows == null
              ? null
              : new ChunkedWriterFactory(rows.createBatchWriterFactory(info), layout);
      return new Factory(staging, nativeRows, layout, fileOrdinal, posOrdinal);
    }

    @Override
    public boolean useCommitCoordinator() {
      return rows == null || rows.useCommitCoordinator();
    }

    @Override
    public void onDataWriterCommit(WriterCommitMessage message) {
      if (rows != null) {
        for (WriterCommitMessage inner : rowMessages(new WriterCommitMessage[] {message})) {
          rows.onDataWriterCommit(inner);
        }
      }
    }

    @Override
    public void commit(WriterCommitMessage[] messages, WriteSummary summary) {
      commit(messages);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
      if (rows != null) {
        rows.commit(rowMessages(messages)); // stages the new rows: no commit yet
      }
      Path positions = positionsFile();
      try {
        ObjectNode args = commitArgs(messages, positions);
        if (nativeRows != null) {
          args.put("rows_folder", nativeRows.location);
          ArrayNode files = args.putArray("rows_files");
          for (WriterCommitMessage message : rowMessages(messages)) {
            for (String path : ((NativeRows.Files) message).paths) {
              files.add(path);
            }
          }
        }
        committing = true; // from here the call owns the new files
        table.bridge().call("commit_merge_on_read", args);
      } finally {
        try {
          Files.deleteIfExists(positions);
        } catch (IOException e) {
          // a temporary file left in the JVM's temporary folder: nothing of the table's
        }
      }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
      if (committing) {
        return; // the commit call owns the files
      }
      if (rows != null) {
        rows.abort(rowMessages(messages));
      } else {
        nativeRows.deleteJobFolder();
      }
    }
  }

  /** A new temporary file for the deleted positions (the commit call's, deleted after it). */
  private static Path positionsFile() {
    try {
      return Files.createTempFile("lakecat-positions-", ".bin");
    } catch (IOException e) {
      throw new UncheckedIOException("lakecat: no temporary file for a commit's positions", e);
    }
  }

  /**
   * The commit call's arguments. The deleted positions, which can be millions, do not travel
   * as JSON: each task's bitmap of each data file is written to {@code positions}, one after
   * the other, and the arguments name the file ({@code positions_file}) and each data file's
   * bitmaps ({@code runs}: path -> [[offset, length], ...] in bytes).
   */
  private ObjectNode commitArgs(WriterCommitMessage[] messages, Path positions) {
    Map<String, List<byte[]>> byFile = new HashMap<>();
    for (WriterCommitMessage message : messages) {
      if (message instanceof Deltas) {
        ((Deltas) message)
            .deletes.forEach(
                (file, bitmap) -> byFile.computeIfAbsent(file, f -> new ArrayList<>()).add(bitmap));
      }
    }
    ObjectNode args = table.rowLevelCommitArgs(command, scan, stageTo);
    args.put("positions_file", positions.toString());
    ObjectNode runs = args.putObject("runs");
    try (FileChannel out = FileChannel.open(positions, StandardOpenOption.WRITE)) {
      long written = 0;
      for (Map.Entry<String, List<byte[]>> entry : byFile.entrySet()) {
        ArrayNode ranges = runs.putArray(entry.getKey());
        for (byte[] bitmap : entry.getValue()) {
          ByteBuffer buffer = ByteBuffer.wrap(bitmap);
          while (buffer.hasRemaining()) {
            out.write(buffer);
          }
          ranges.addArray().add(written).add(bitmap.length);
          written += bitmap.length;
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("lakecat: writing a commit's positions failed", e);
    }
    return args;
  }

  private static final class Factory implements DeltaWriterFactory {
    private final DataWriterFactory staging; // null: native rows
    private final NativeRows nativeRows; // null: staged rows
    private final ChunkedWriterFactory.Layout layout;
    private final int fileOrdinal;
    private final int posOrdinal;

    Factory(
        DataWriterFactory staging,
        NativeRows nativeRows,
        ChunkedWriterFactory.Layout layout,
        int fileOrdinal,
        int posOrdinal) {
      this.staging = staging;
      this.nativeRows = nativeRows;
      this.layout = layout;
      this.fileOrdinal = fileOrdinal;
      this.posOrdinal = posOrdinal;
    }

    @Override
    public DeltaWriter<InternalRow> createWriter(int partitionId, long taskId) {
      if (nativeRows != null) {
        return new Writer(
            new NativeSink(nativeRows.writer(partitionId, taskId), layout),
            layout,
            fileOrdinal,
            posOrdinal);
      }
      return new Writer(
          new StagedSink(staging.createWriter(partitionId, taskId)),
          layout,
          fileOrdinal,
          posOrdinal);
    }
  }

  /** Where a task's new rows go. */
  private interface Sink {
    /** A new row; {@code lineage}, when not null, joins it (the staged write's layout). */
    void write(InternalRow lineage, InternalRow row) throws IOException;

    WriterCommitMessage commit() throws IOException;

    void abort() throws IOException;

    void close() throws IOException;
  }

  private static final class StagedSink implements Sink {
    private final DataWriter<InternalRow> rows;

    StagedSink(DataWriter<InternalRow> rows) {
      this.rows = rows;
    }

    @Override
    public void write(InternalRow lineage, InternalRow row) throws IOException {
      if (lineage == null) {
        rows.write(row);
      } else {
        rows.write(lineage, row);
      }
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
      return rows.commit();
    }

    @Override
    public void abort() throws IOException {
      rows.abort();
    }

    @Override
    public void close() throws IOException {
      rows.close();
    }
  }

  /**
   * The task's native writer. With row lineage each row is written joined with its {@code
   * _row_id} (taken from {@code lineage}, a metadata row of the layout's; null for an inserted
   * row) and a null {@code _last_updated_sequence_number}.
   */
  private static final class NativeSink implements Sink {
    private final NativeRows.Writer rows;
    private final int rowId; // in the metadata rows; -1: no lineage
    private final GenericInternalRow ids = new GenericInternalRow(2);
    private final JoinedRow joined = new JoinedRow();

    NativeSink(NativeRows.Writer rows, ChunkedWriterFactory.Layout layout) {
      this.rows = rows;
      this.rowId = layout.lineage.length == 0 ? -1 : layout.lineage[0];
    }

    @Override
    public void write(InternalRow lineage, InternalRow row) {
      if (rowId < 0) {
        rows.write(row, TargetFileSize.rowBytes(row));
        return;
      }
      ids.update(0, lineage == null || lineage.isNullAt(rowId) ? null : lineage.getLong(rowId));
      ids.setNullAt(1);
      rows.write(joined.apply(row, ids), TargetFileSize.rowBytes(row) + 16);
    }

    @Override
    public WriterCommitMessage commit() {
      return rows.commit();
    }

    @Override
    public void abort() {
      rows.abort();
    }

    @Override
    public void close() {}
  }

  /** A bitmap in the portable format (what {@code read_positions} in the bridge reads). */
  private static byte[] serialize(Roaring64NavigableMap bitmap) throws IOException {
    bitmap.runOptimize();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream((int) bitmap.serializedSizeInBytes());
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      bitmap.serializePortable(out);
    }
    return bytes.toByteArray();
  }

  private static final class Writer implements DeltaWriter<InternalRow> {
    private final Sink rows;
    private final ChunkedWriterFactory.Layout layout;
    private final int fileOrdinal;
    private final int posOrdinal;
    private final Map<String, Roaring64NavigableMap> deletes = new HashMap<>();
    private final GenericInternalRow updated;

    Writer(Sink rows, ChunkedWriterFactory.Layout layout, int fileOrdinal, int posOrdinal) {
      this.rows = rows;
      this.layout = layout;
      this.fileOrdinal = fileOrdinal;
      this.posOrdinal = posOrdinal;
      this.updated = new GenericInternalRow(layout.metadata.size());
    }

    private void deleted(InternalRow id) {
      String file = id.getUTF8String(fileOrdinal).toString();
      deletes
          .computeIfAbsent(file, f -> new Roaring64NavigableMap(false))
          .addLong(id.getLong(posOrdinal));
    }

    /**
     * An updated row's lineage, as a metadata row of the layout's: its {@code _row_id} kept, its
     * sequence number the commit's; null without lineage.
     */
    private InternalRow lineageOfUpdate(InternalRow metadata) {
      if (layout.lineage.length == 0 || metadata == null) {
        return null;
      }
      int rowId = layout.lineage[0];
      updated.update(rowId, metadata.isNullAt(rowId) ? null : metadata.getLong(rowId));
      updated.setNullAt(layout.lineage[1]);
      return updated;
    }

    @Override
    public void delete(InternalRow metadata, InternalRow id) throws IOException {
      deleted(id);
    }

    @Override
    public void update(InternalRow metadata, InternalRow id, InternalRow row) throws IOException {
      deleted(id);
      rows.write(lineageOfUpdate(metadata), row);
    }

    @Override
    public void reinsert(InternalRow metadata, InternalRow row) throws IOException {
      rows.write(lineageOfUpdate(metadata), row);
    }

    @Override
    public void insert(InternalRow row) throws IOException {
      rows.write(null, row);
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
      HashMap<String, byte[]> out = new HashMap<>();
      for (Map.Entry<String, Roaring64NavigableMap> entry : deletes.entrySet()) {
        out.put(entry.getKey(), serialize(entry.getValue()));
      }
      return new Deltas(rows.commit(), out);
    }

    @Override
    public void abort() throws IOException {
      rows.abort();
    }

    @Override
    public void close() throws IOException {
      rows.close();
    }
  }
}
