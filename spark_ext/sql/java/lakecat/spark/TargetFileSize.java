package lakecat.spark;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.datasources.OutputWriter;

/**
 * When a writer of Spark's Parquet format rolls to a new file: once the file it writes reaches the
 * table's target size ({@code write.target-file-size-bytes}), as Iceberg's writers roll. The size
 * is what parquet-java's writer counts for its row groups: the bytes of the row groups written so
 * far plus the encoded, compressed pages and the open page it buffers for the next one (its
 * {@code InternalParquetRecordWriter.getDataSize()}, the quantity Iceberg's own Parquet writer
 * reports as its length). Spark's {@code ParquetOutputWriter} does not expose its record writer, so
 * it is reached by reflection, once per JVM; where that fails (another Spark or parquet-java), the
 * rows' uncompressed size stands in ({@link #rowBytes}), which rolls early: files stay under the
 * target.
 *
 * <p>One instance per open file. The size is asked after the first 100 rows, then again after
 * half the rows its current average row size says are left to the target (at most 1,000 rows
 * later, at least 10), so a file overshoots the target by a few rows' bytes at most.
 */
public final class TargetFileSize {
  private static final int FIRST_CHECK = 100;
  private static final int MIN_STEP = 10;
  private static final int MAX_STEP = 1000;
  private static final Field RECORD_WRITER = field(
      "org.apache.spark.sql.execution.datasources.parquet.ParquetOutputWriter", "recordWriter");
  private static final Field INTERNAL_WRITER =
      field("org.apache.parquet.hadoop.ParquetRecordWriter", "internalWriter");
  private static final Method DATA_SIZE =
      method("org.apache.parquet.hadoop.InternalParquetRecordWriter", "getDataSize");

  private final long target;
  private long rows;
  private long uncompressed;
  private long nextCheck = FIRST_CHECK;

  TargetFileSize(long target) {
    this.target = target;
  }

  /**
   * Count a row of {@code bytes} uncompressed bytes ({@link #rowBytes}) that {@code writer} just
   * wrote; whether its file has reached the target (the caller closes it).
   */
  boolean reached(OutputWriter writer, long bytes) {
    rows++;
    uncompressed += bytes;
    if (rows < nextCheck) {
      return false;
    }
    long size = dataSize(writer);
    if (size < 0) {
      size = uncompressed;
    }
    if (size >= target) {
      return true;
    }
    double perRow = Math.max(1.0, (double) size / rows);
    long left = (long) ((target - size) / perRow);
    nextCheck = rows + Math.max(MIN_STEP, Math.min(MAX_STEP, left / 2));
    return false;
  }

  /** About how many bytes a row takes uncompressed (its own size when Spark tells it). */
  static long rowBytes(InternalRow row) {
    return row instanceof UnsafeRow ? ((UnsafeRow) row).getSizeInBytes() : 8L * row.numFields();
  }

  /** The Parquet data size of the file {@code writer} writes; -1 when it cannot be told. */
  static long dataSize(OutputWriter writer) {
    if (RECORD_WRITER == null || INTERNAL_WRITER == null || DATA_SIZE == null) {
      return -1;
    }
    try {
      if (!RECORD_WRITER.getDeclaringClass().isInstance(writer)) {
        return -1;
      }
      Object records = RECORD_WRITER.get(writer);
      if (!INTERNAL_WRITER.getDeclaringClass().isInstance(records)) {
        return -1;
      }
      return (Long) DATA_SIZE.invoke(INTERNAL_WRITER.get(records));
    } catch (ReflectiveOperationException | RuntimeException e) {
      return -1;
    }
  }

  /** Whether the data size of Spark's Parquet writers can be told in this JVM (tests pin it). */
  public static boolean measured() {
    return RECORD_WRITER != null && INTERNAL_WRITER != null && DATA_SIZE != null;
  }

  private static Field field(String className, String name) {
    try {
      Field f = Class.forName(className).getDeclaredField(name);
      f.setAccessible(true);
      return f;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return null;
    }
  }

  private static Method method(String className, String name) {
    try {
      Method m = Class.forName(className).getDeclaredMethod(name);
      m.setAccessible(true);
      return m;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return null;
    }
  }
}
