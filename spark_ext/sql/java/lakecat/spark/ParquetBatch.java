package lakecat.spark;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.paths.SparkPath;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.FilePartition;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.parquet.ParquetOptions;
import org.apache.spark.sql.execution.datasources.parquet.ParquetReadSupport;
import org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetPartitionReaderFactory;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.internal.connector.PredicateUtils;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A read of lakecat data files by Spark's own (vectorized) Parquet reader: the files lakecat
 * planned, split and packed into {@link FilePartition}s as Spark packs a Parquet table's files
 * ({@code spark.sql.files.maxPartitionBytes}, {@code openCostInBytes}), read by {@link
 * ParquetPartitionReaderFactory} set up as Spark's {@code ParquetScan} sets it up. Spark matches
 * Parquet columns by name, so lakecat chooses this batch only when that gives the rows lakecat
 * reads by field id (the Python side decides, {@code lakecat.spark_ext.native.scan}). The pushed
 * filters prune row groups by their statistics; Spark still applies every filter to the rows.
 *
 * <p>Only Spark's classes travel to executors: the partitions and the reader factory.
 */
final class ParquetBatch implements Batch {
  // Read options as lk.read sets them: Iceberg's dates and timestamps are never rebased.
  private static final Map<String, String> READ_OPTIONS =
      Map.of("datetimeRebaseMode", "CORRECTED", "int96RebaseMode", "CORRECTED");
  // Session settings Spark's ParquetScan copies into the reader's Hadoop configuration (by key,
  // so that a Spark version without one of them still runs).
  private static final String[] READER_SETTINGS = {
    "spark.sql.optimizer.nestedSchemaPruning.enabled",
    "spark.sql.caseSensitive",
    "spark.sql.parquet.binaryAsString",
    "spark.sql.parquet.int96AsTimestamp",
    "spark.sql.parquet.inferTimestampNTZ.enabled",
    "spark.sql.legacy.parquet.nanosAsLong",
    "spark.sql.timestampNanosTypes.enabled",
    "spark.sql.parquet.reader.respectUnknownTypeAnnotation.enabled",
  };

  private final List<String> uris;
  private final List<Long> sizes;
  private final StructType schema;
  private final Filter[] filters;

  /**
   * The files (URIs and sizes) read as {@code schema}: nullable throughout, since a file may
   * lack a column (read as nulls) whatever the table says of it.
   */
  ParquetBatch(List<String> uris, List<Long> sizes, StructType schema, Predicate[] predicates) {
    this.uris = uris;
    this.sizes = sizes;
    this.schema = (StructType) nullable(schema);
    this.filters = PredicateUtils.toV1(predicates);
  }

  private static org.apache.spark.sql.classic.SparkSession session() {
    return (org.apache.spark.sql.classic.SparkSession) org.apache.spark.sql.SparkSession.active();
  }

  @Override
  public InputPartition[] planInputPartitions() {
    org.apache.spark.sql.classic.SparkSession session = session();
    SQLConf conf = session.sessionState().conf();
    long openCost = conf.filesOpenCostInBytes();
    long total = 0;
    for (long size : sizes) {
      total += size + openCost;
    }
    long maxSplit = maxSplitBytes(session, conf, total);
    List<PartitionedFile> splits = new ArrayList<>();
    scala.collection.immutable.Map<String, Object> noMetadata =
        scala.collection.immutable.Map$.MODULE$.empty();
    for (int i = 0; i < uris.size(); i++) {
      SparkPath path = SparkPath.fromUrlString(uris.get(i));
      long size = sizes.get(i);
      for (long start = 0; start < size; start += maxSplit) {
        long length = Math.min(maxSplit, size - start);
        splits.add(
            new PartitionedFile(
                InternalRow.empty(), path, start, length, new String[0], 0L, size, noMetadata));
      }
    }
    splits.sort(Comparator.comparingLong(PartitionedFile::length).reversed());
    scala.collection.immutable.Seq<FilePartition> partitions =
        FilePartition.getFilePartitions(
            session, CollectionConverters.asScala(splits).toSeq(), maxSplit);
    return CollectionConverters.asJava(partitions).toArray(new InputPartition[0]);
  }

  /** Spark's split size for a read of {@code total} bytes (open costs included). */
  private static long maxSplitBytes(
      org.apache.spark.sql.classic.SparkSession session, SQLConf conf, long total) {
    scala.Option<Object> minimum = conf.filesMinPartitionNum();
    int parallelism =
        minimum.isDefined()
            ? (Integer) minimum.get()
            : session.sparkContext().defaultParallelism();
    long perCore = total / Math.max(1, parallelism);
    return Math.min(conf.filesMaxPartitionBytes(), Math.max(conf.filesOpenCostInBytes(), perCore));
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    org.apache.spark.sql.classic.SparkSession session = session();
    SQLConf conf = session.sessionState().conf();
    Configuration hadoop = session.sessionState().newHadoopConf();
    String json = schema.json();
    hadoop.set("parquet.read.support.class", ParquetReadSupport.class.getName());
    hadoop.set(ParquetReadSupport.SPARK_ROW_REQUESTED_SCHEMA(), json);
    hadoop.set(ParquetWriteSupport.SPARK_ROW_SCHEMA(), json);
    hadoop.set("spark.sql.session.timeZone", conf.sessionLocalTimeZone());
    for (String key : READER_SETTINGS) {
      try {
        hadoop.set(key, conf.getConfString(key));
      } catch (NoSuchElementException unknown) {
        // a setting this Spark version does not have
      }
    }
    Broadcast<SerializableConfiguration> broadcast =
        JavaSparkContext.fromSparkContext(session.sparkContext())
            .broadcast(new SerializableConfiguration(hadoop));
    scala.collection.immutable.Map<String, String> options =
        scala.collection.immutable.Map$.MODULE$.empty();
    for (Map.Entry<String, String> entry : new HashMap<>(READ_OPTIONS).entrySet()) {
      options = options.updated(entry.getKey(), entry.getValue());
    }
    return new ParquetPartitionReaderFactory(
        conf,
        broadcast,
        schema,
        schema,
        new StructType(),
        filters,
        scala.Option.empty(),
        new ParquetOptions(options, conf));
  }

  /** {@code type} with every field, element and value nullable. */
  private static DataType nullable(DataType type) {
    if (type instanceof StructType) {
      StructField[] fields = ((StructType) type).fields();
      StructField[] out = new StructField[fields.length];
      for (int i = 0; i < fields.length; i++) {
        StructField f = fields[i];
        out[i] = new StructField(f.name(), nullable(f.dataType()), true, f.metadata());
      }
      return new StructType(out);
    }
    if (type instanceof ArrayType) {
      return new ArrayType(nullable(((ArrayType) type).elementType()), true);
    }
    if (type instanceof MapType) {
      MapType map = (MapType) type;
      return new MapType(map.keyType(), nullable(map.valueType()), true);
    }
    return type;
  }
}
