package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.spark.TaskContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.util.SerializableConfiguration;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The new rows (updated and inserted) of a merge-on-read statement, written inside Spark's tasks
 * by Spark's own Parquet writer, as planned by the bridge ({@code
 * lakecat.spark_ext.native.delta_rows}): the table's columns with their field ids, each file in
 * the {@code <hidden column>=<value>} folders of its partition under the statement's job folder.
 * A task keeps one open file per partition it meets, rolls to a new file when one reaches the
 * table's target file size ({@link TargetFileSize}), and reports the files it wrote in its
 * commit message ({@link Files}); an aborted task deletes its files. The driver's commit call
 * describes the reported files from their folders and footers and deletes any other file of the
 * job folder.
 */
final class NativeRows implements Serializable {
  static final String DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__";
  private static final long MICROS_PER_DAY = 86_400_000_000L;
  private static final long MICROS_PER_HOUR = 3_600_000_000L;
  /** Files a task keeps open at once (the other partitions' rows are buffered). */
  static final int MAX_OPEN = 16;
  /** How many bytes of rows (uncompressed) a task buffers before writing them. */
  static final long BUFFER_BYTES = 64L * 1024 * 1024;

  final String folder; // the job folder, as Spark's writer names it
  final String location; // the same, as the table names it (for the commit call)
  private final StructType schema;
  private final Partition[] partitions;
  private final long targetFileSize;
  private final OutputWriterFactory factory;
  private final Broadcast<SerializableConfiguration> conf;

  private NativeRows(
      String folder,
      String location,
      StructType schema,
      Partition[] partitions,
      long targetFileSize,
      OutputWriterFactory factory,
      Broadcast<SerializableConfiguration> conf) {
    this.folder = folder;
    this.location = location;
    this.schema = schema;
    this.partitions = partitions;
    this.targetFileSize = targetFileSize;
    this.factory = factory;
    this.conf = conf;
  }

  /** The bridge's plan ({@code native_rows}) made ready for the tasks. */
  static NativeRows plan(JsonNode plan, SparkSession session) {
    StructType schema = (StructType) DataType.fromJson(plan.get("schema").asText());
    Map<String, String> options = Names.map(plan.get("options"));
    Configuration hadoop = session.sessionState().newHadoopConf();
    options.forEach(hadoop::set);
    Job job;
    try {
      job = Job.getInstance(hadoop);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    OutputWriterFactory factory =
        new IdParquetFormat()
            .prepareWrite(
                session,
                job,
                scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(options)),
                schema);
    // what prepareWrite copied from the session's settings, set as lakecat writes Parquet
    Configuration written = job.getConfiguration();
    Names.map(plan.get("confs")).forEach(written::set);
    List<Partition> partitions = new ArrayList<>();
    for (JsonNode p : plan.get("partitions")) {
      int ordinal = p.get("ordinal").asInt();
      partitions.add(
          new Partition(
              p.get("column").asText(),
              ordinal,
              p.get("transform").asText(),
              schema.fields()[ordinal].dataType()));
    }
    return new NativeRows(
        plan.get("folder").asText(),
        plan.get("location").asText(),
        schema,
        partitions.toArray(new Partition[0]),
        plan.get("target_file_size").asLong(),
        factory,
        ConfBroadcasts.of(session.sparkContext(), written));
  }

  /**
   * One hidden partition column: a transform of a top-level column, as a folder value. The
   * transforms: identity, year, month, day, hour, {@code bucket[N]} (of an int, long, date,
   * timestamp, string or decimal: the spec's Murmur3 hash, as the catalog's {@code bucket}
   * function) and {@code truncate[W]} (of an int, long, decimal, string or binary; an int or
   * long that truncates past its type's range, or a decimal past its precision, fails the task,
   * as the native write fails). A truncated binary's folder value is its bytes in hexadecimal.
   */
  static final class Partition implements Serializable {
    final String column;
    final int ordinal;
    final String transform;
    final DataType type;
    private final int width; // N of bucket[N], W of truncate[W]; 0 for the other transforms

    Partition(String column, int ordinal, String transform, DataType type) {
      this.column = column;
      this.ordinal = ordinal;
      this.transform = transform;
      this.type = type;
      int open = transform.indexOf('[');
      this.width =
          open < 0 ? 0 : Integer.parseInt(transform.substring(open + 1, transform.length() - 1));
    }

    /** Whether a row's source value is {@code value} (from {@link #source}), without copying. */
    boolean holds(InternalRow row, Object value) {
      if (row.isNullAt(ordinal)) {
        return value == null;
      }
      if (value == null) {
        return false;
      }
      if (type instanceof StringType) {
        return row.getUTF8String(ordinal).equals(value);
      }
      if (type instanceof IntegerType || type instanceof DateType) {
        return row.getInt(ordinal) == (Long) value;
      }
      if (type instanceof BooleanType) {
        return row.getBoolean(ordinal) == (Boolean) value;
      }
      if (type instanceof DecimalType) {
        return value.equals(source(row));
      }
      if (type instanceof BinaryType) {
        return java.util.Arrays.equals(row.getBinary(ordinal), (byte[]) value);
      }
      return row.getLong(ordinal) == (Long) value; // long, timestamp and timestamp_ntz
    }

    /** The source value of a row, copied (a row's buffers are reused); null for null. */
    Object source(InternalRow row) {
      if (row.isNullAt(ordinal)) {
        return null;
      }
      if (type instanceof StringType) {
        return row.getUTF8String(ordinal).clone();
      }
      if (type instanceof DecimalType) {
        DecimalType d = (DecimalType) type;
        return row.getDecimal(ordinal, d.precision(), d.scale()).toJavaBigDecimal();
      }
      if (type instanceof BooleanType) {
        return row.getBoolean(ordinal);
      }
      if (type instanceof BinaryType) {
        return row.getBinary(ordinal).clone();
      }
      if (type instanceof IntegerType || type instanceof DateType) {
        return (long) row.getInt(ordinal);
      }
      return row.getLong(ordinal); // long, timestamp and timestamp_ntz (microseconds)
    }

    /** The folder value of a source value (lakecat.spark_ext.native.partitions' encoding). */
    String folderValue(Object value) {
      if (value == null) {
        return DEFAULT_PARTITION;
      }
      if (transform.startsWith("bucket[")) {
        return Integer.toString((bucketHash(value) & Integer.MAX_VALUE) % width);
      }
      if (transform.startsWith("truncate[")) {
        return truncate(value);
      }
      if ("identity".equals(transform)) {
        if (value instanceof UTF8String) {
          return encode(value.toString());
        }
        if (value instanceof java.math.BigDecimal) {
          return ((java.math.BigDecimal) value).toPlainString();
        }
        return value.toString();
      }
      long days;
      if (type instanceof DateType) {
        days = (Long) value;
      } else if ("hour".equals(transform)) {
        return Long.toString(Math.floorDiv((Long) value, MICROS_PER_HOUR));
      } else {
        days = Math.floorDiv((Long) value, MICROS_PER_DAY);
      }
      if ("day".equals(transform)) {
        return Long.toString(days);
      }
      LocalDate date = LocalDate.ofEpochDay(days);
      long years = date.getYear() - 1970L;
      if ("year".equals(transform)) {
        return Long.toString(years);
      }
      if ("month".equals(transform)) {
        return Long.toString(years * 12 + date.getMonthValue() - 1);
      }
      throw new IllegalStateException("lakecat: no partition transform " + transform);
    }

    /** The spec's hash of a source value (from {@link #source}) for a bucket. */
    private static int bucketHash(Object value) {
      if (value instanceof UTF8String) {
        return LakecatFunctions.murmur3(((UTF8String) value).getBytes());
      }
      if (value instanceof java.math.BigDecimal) {
        return LakecatFunctions.murmur3(
            ((java.math.BigDecimal) value).unscaledValue().toByteArray());
      }
      return LakecatFunctions.hashLong((Long) value); // int, long, date, timestamps
    }

    /** The folder value of truncate[W] of a source value: a string's first W code points, a
     * number (a decimal's unscaled value) floored to a multiple of W within its type's range
     * (a decimal's precision). */
    private String truncate(Object value) {
      if (value instanceof UTF8String) {
        UTF8String text = (UTF8String) value;
        return encode((text.numChars() <= width ? text : text.substring(0, width)).toString());
      }
      if (value instanceof byte[]) {
        byte[] bytes = (byte[]) value;
        return encode(hex(bytes, Math.min(bytes.length, width)));
      }
      if (value instanceof java.math.BigDecimal) {
        java.math.BigDecimal decimal = (java.math.BigDecimal) value;
        java.math.BigInteger unscaled = decimal.unscaledValue();
        java.math.BigInteger truncated =
            unscaled.subtract(unscaled.mod(java.math.BigInteger.valueOf(width))); // mod >= 0
        int precision = ((DecimalType) type).precision();
        if (truncated.negate().compareTo(java.math.BigInteger.TEN.pow(precision)) >= 0) {
          throw new ArithmeticException(
              "lakecat: partition column " + column + ": " + transform + " of " + decimal
                  + " overflows");
        }
        return new java.math.BigDecimal(truncated, decimal.scale()).toPlainString();
      }
      long v = (Long) value;
      long truncated = v - Math.floorMod(v, (long) width);
      boolean inRange =
          type instanceof IntegerType ? truncated >= Integer.MIN_VALUE : truncated <= v;
      if (!inRange) {
        throw new ArithmeticException(
            "lakecat: partition column " + column + ": " + transform + " of " + v + " overflows");
      }
      return Long.toString(truncated);
    }

    /** The first {@code length} bytes in upper-case hexadecimal (as Spark's {@code hex}). */
    private static String hex(byte[] bytes, int length) {
      StringBuilder out = new StringBuilder(2 * length);
      for (int i = 0; i < length; i++) {
        out.append(Character.toUpperCase(Character.forDigit((bytes[i] >> 4) & 0xF, 16)));
        out.append(Character.toUpperCase(Character.forDigit(bytes[i] & 0xF, 16)));
      }
      return out.toString();
    }

    /** A string as a folder name: URL-encoded, "~" for "%" and "~2A" for "*". */
    private static String encode(String text) {
      if (text.isEmpty()) {
        return "~";
      }
      if (text.equals(DEFAULT_PARTITION)) {
        return "~" + DEFAULT_PARTITION;
      }
      return URLEncoder.encode(text, StandardCharsets.UTF_8).replace("%", "~").replace("*", "~2A");
    }
  }

  /** The files one task wrote (paths under the job folder). */
  static final class Files implements WriterCommitMessage {
    final String[] paths;

    Files(String[] paths) {
      this.paths = paths;
    }
  }

  Writer writer(int partitionId, long taskId) {
    return new Writer(partitionId, taskId);
  }

  /**
   * One task's writer: an open file per partition met, rolled at the target size. Past {@link
   * #MAX_OPEN} open files (each buffers a row group), the rows of the other partitions are kept
   * as compact copies, grouped by partition, up to {@link #BUFFER_BYTES}, and written then
   * (and at the end) one file per partition, as the staged write writes a chunk: a task that
   * meets many partitions in any order writes a few files per partition, not one per row.
   */
  final class Writer {
    private final int partitionId;
    private final long taskId;
    private final String prefix = UUID.randomUUID().toString();
    private final TaskAttemptContext context;
    private final Map<List<Object>, Open> open = new HashMap<>();
    private final Map<List<Object>, List<UnsafeRow>> buffered = new LinkedHashMap<>();
    private long bufferedBytes;
    private UnsafeProjection copier;
    private final List<String> written = new ArrayList<>();
    private final Object[] lastKey;
    private List<Object> key; // the folder values of lastKey
    private Open last; // the open file of key, or null
    private int files;

    Writer(int partitionId, long taskId) {
      this.partitionId = partitionId;
      this.taskId = taskId;
      this.lastKey = new Object[partitions.length];
      Configuration configuration = new Configuration(conf.value().value());
      TaskContext task = TaskContext.get();
      int stage = task == null ? 0 : task.stageId();
      int attempt = task == null ? 0 : task.attemptNumber();
      TaskAttemptID id =
          new TaskAttemptID(
              new TaskID(new JobID("lakecat", stage), TaskType.MAP, partitionId), attempt);
      this.context = new TaskAttemptContextImpl(configuration, id);
    }

    /** Write a row of about {@code bytes} bytes uncompressed ({@link TargetFileSize#rowBytes}). */
    void write(InternalRow row, long bytes) {
      if (key == null || !sameKey(row)) {
        keyOf(row);
      }
      if (last == null && open.size() < MAX_OPEN) {
        last = openFile(key);
        open.put(key, last);
      }
      if (last == null) {
        buffer(row, bytes);
      } else if (append(last, row, bytes)) {
        close(last);
      }
    }

    /** Write a row to a file; whether the file reached the target size (to be closed). */
    private boolean append(Open target, InternalRow row, long bytes) {
      target.writer.write(row);
      return target.size.reached(target.writer, bytes);
    }

    private boolean sameKey(InternalRow row) {
      for (int i = 0; i < partitions.length; i++) {
        if (!partitions[i].holds(row, lastKey[i])) {
          return false;
        }
      }
      return true;
    }

    private void keyOf(InternalRow row) {
      List<Object> values = new ArrayList<>(partitions.length);
      for (int i = 0; i < partitions.length; i++) {
        lastKey[i] = partitions[i].source(row);
        values.add(partitions[i].folderValue(lastKey[i]));
      }
      key = values;
      last = open.get(values);
    }

    /** A new file of partition {@code values}. */
    private Open openFile(List<Object> values) {
      StringBuilder path = new StringBuilder(folder);
      for (int i = 0; i < partitions.length; i++) {
        path.append('/').append(partitions[i].column).append('=').append(values.get(i));
      }
      path.append('/')
          .append(String.format("%05d-%d-%s-%05d", partitionId, taskId, prefix, ++files))
          .append(factory.getFileExtension(context));
      String location = path.toString();
      written.add(location); // before it exists: an abort deletes it whatever happens next
      return new Open(
          values, factory.newInstance(location, schema, context), new TargetFileSize(targetFileSize));
    }

    private void buffer(InternalRow row, long bytes) {
      if (copier == null) {
        copier = UnsafeProjection.create(schema);
      }
      buffered.computeIfAbsent(key, k -> new ArrayList<>()).add(copier.apply(row).copy());
      bufferedBytes += bytes;
      if (bufferedBytes >= BUFFER_BYTES) {
        flush();
      }
    }

    /** Write the buffered rows, a file per partition (rolled at the target size). */
    private void flush() {
      for (Map.Entry<List<Object>, List<UnsafeRow>> group : buffered.entrySet()) {
        Open target = null;
        for (UnsafeRow row : group.getValue()) {
          if (target == null) {
            target = openFile(group.getKey());
          }
          if (append(target, row, row.getSizeInBytes())) {
            target.writer.close();
            target = null;
          }
        }
        if (target != null) {
          target.writer.close();
        }
      }
      buffered.clear();
      bufferedBytes = 0;
    }

    private void close(Open target) {
      open.remove(target.key);
      if (last == target) {
        last = null;
      }
      target.writer.close();
    }

    Files commit() {
      closeAll();
      flush();
      return new Files(written.toArray(new String[0]));
    }

    void abort() {
      try {
        closeAll();
      } catch (RuntimeException e) {
        // the files are deleted below whatever state they are in
      }
      for (String location : written) {
        try {
          Path path = new Path(location);
          FileSystem fs = path.getFileSystem(context.getConfiguration());
          fs.delete(path, false);
        } catch (IOException | RuntimeException e) {
          // left for orphan removal: the job never reports it
        }
      }
    }

    void closeAll() {
      RuntimeException failure = null;
      for (Open file : new ArrayList<>(open.values())) {
        try {
          close(file);
        } catch (RuntimeException e) {
          failure = failure == null ? e : failure;
        }
      }
      if (failure != null) {
        throw failure;
      }
    }
  }

  private static final class Open {
    final List<Object> key;
    final OutputWriter writer;
    final TargetFileSize size;

    Open(List<Object> key, OutputWriter writer, TargetFileSize size) {
      this.key = key;
      this.writer = writer;
      this.size = size;
    }
  }

  /** Delete the job folder and all in it: an aborted statement's files (on the driver). */
  void deleteJobFolder() {
    try {
      Path path = new Path(folder);
      path.getFileSystem(conf.value().value()).delete(path, true);
    } catch (IOException | RuntimeException e) {
      // left for orphan removal: no commit names them
    }
  }
}
