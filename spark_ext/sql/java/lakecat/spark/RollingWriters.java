package lakecat.spark;

import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.types.StructType;

/**
 * The writers of a Spark file write ({@code df.write}) that roll to a new file at the target size
 * ({@link TargetFileSize}), which Spark's own file writer cannot do (it rolls only by a row count,
 * {@code maxRecordsPerFile}). Spark asks for a writer of a file name in a task's folder of its
 * commit protocol; the first file takes that name and each further one the same name with {@code
 * -00001}, {@code -00002}, ... before the extension. They are written in the same folder, which
 * the commit protocol moves whole when the task commits and deletes when it aborts, so a further
 * file is committed or discarded with the task's first. No file is opened before its first row.
 */
final class RollingWriters extends OutputWriterFactory {
  /** The write option of the target size in bytes ({@link IdParquetFormat} reads it). */
  static final String TARGET_SIZE_OPTION = "lakecat.target-file-size";

  private final OutputWriterFactory files;
  private final long target;

  RollingWriters(OutputWriterFactory files, long target) {
    if (target <= 0) {
      throw new IllegalArgumentException(
          "lakecat: the target file size must be positive, not " + target);
    }
    this.files = files;
    this.target = target;
  }

  @Override
  public String getFileExtension(TaskAttemptContext context) {
    return files.getFileExtension(context);
  }

  @Override
  public OutputWriter newInstance(String path, StructType dataSchema, TaskAttemptContext context) {
    return new Rolling(path, dataSchema, context);
  }

  private final class Rolling extends OutputWriter {
    private final String first;
    private final StructType schema;
    private final TaskAttemptContext context;
    private final String extension;
    private OutputWriter current;
    private TargetFileSize size;
    private int rolled;

    Rolling(String path, StructType schema, TaskAttemptContext context) {
      this.first = path;
      this.schema = schema;
      this.context = context;
      this.extension = files.getFileExtension(context);
      open(path); // Spark opens a writer for a row it has: the first file is never empty
    }

    private void open(String path) {
      current = files.newInstance(path, schema, context);
      size = new TargetFileSize(target);
    }

    private String next() {
      String number = String.format("-%05d", ++rolled);
      return first.endsWith(extension)
          ? first.substring(0, first.length() - extension.length()) + number + extension
          : first + number;
    }

    @Override
    public void write(InternalRow row) {
      if (current == null) {
        open(next());
      }
      current.write(row);
      if (size.reached(current, TargetFileSize.rowBytes(row))) {
        OutputWriter full = current;
        current = null;
        full.close();
      }
    }

    @Override
    public void close() {
      if (current != null) {
        OutputWriter last = current;
        current = null;
        last.close();
      }
    }

    @Override
    public String path() {
      return first;
    }
  }
}
