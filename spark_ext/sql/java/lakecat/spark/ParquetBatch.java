package lakecat.spark;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.paths.SparkPath;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.And;
import org.apache.spark.sql.connector.expressions.filter.Not;
import org.apache.spark.sql.connector.expressions.filter.Or;
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
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.util.SerializableConfiguration;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A read of lakecat data files by Spark's own (vectorized) Parquet reader: the files lakecat
 * planned, split and packed into {@link FilePartition}s as Spark packs a Parquet table's files
 * ({@code spark.sql.files.maxPartitionBytes}, {@code openCostInBytes}), read by {@link
 * ParquetPartitionReaderFactory} set up as Spark's {@code ParquetScan} sets it up. Spark matches
 * Parquet columns by name, so lakecat chooses this batch only when that gives the rows lakecat
 * reads by field id (the Python side decides, {@code lakecat.spark_ext.native.scan}). The pushed
 * filters prune row groups and pages by their statistics; Spark still applies to the rows every
 * filter that partition values do not decide alone. A copy-on-write operation's read passes none ({@code LakecatScan.RowLevel}): it
 * must return every row of its files.
 *
 * <p>The row id columns {@code _file} and {@code _pos} (a row-level operation's read, or a query
 * of them) come from Spark's reader too: {@code _file} is a constant column per file (a
 * partition value of Spark's, holding the path lakecat records for the file) and {@code _pos}
 * is Spark's row index ({@code _tmp_metadata_row_index}: the row's position in its file, counted
 * over every row group, whichever are skipped). Spark appends constant columns after the
 * file's, so when both are read a {@link ReorderedReaders} puts {@code _file} back before {@code
 * _pos}, as the scan's schema has them.
 *
 * <p>Files with position deletes or a deletion vector come with their deleted positions (sorted;
 * lakecat reads the delete files on the driver): the batch then reads every file's row index,
 * whether the query asked for {@code _pos} or not, and {@link PerFileReaders} drops the rows
 * whose index is deleted. The row lineage columns ({@code _row_id}, {@code
 * _last_updated_sequence_number}) are read as the files store them, by name, and {@link
 * PerFileReaders} assigns their nulls from each file's first row id (plus the row index) and
 * data sequence number.
 *
 * <p>A read whose files are grouped by partition ({@link DataGrouping}) packs each key's files
 * into tasks of their own, each task carrying its key.
 *
 * <p>What travels to executors: the partitions, Spark's reader factory and, when the columns
 * need reordering or rows need dropping, its wrapper (with the deleted positions).
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

  // Spark's name of the row index column its Parquet reader fills (FileFormat's constant).
  static final String ROW_INDEX = "_tmp_metadata_row_index";

  private final List<NativeFile> files;
  private final StructType dataSchema; // what the files hold; _pos as Spark's row index
  private final StructType fileSchema; // _file, a constant per file, or nothing
  private final List<String> output; // the scan's columns, _pos named as the row index
  private final Filter[] filters;

  /**
   * The files read as {@code schema}: nullable throughout, since a file may lack a column (read
   * as nulls) whatever the table says of it. The row id columns, when read, are last ({@code
   * _file} before {@code _pos}), as {@link LakecatScan#readSchema()} puts them.
   */
  ParquetBatch(List<NativeFile> files, StructType schema, Predicate[] predicates) {
    this.files = files;
    List<StructField> data = new ArrayList<>();
    List<StructField> file = new ArrayList<>();
    List<String> names = new ArrayList<>();
    boolean pos = false;
    for (StructField field : ((StructType) nullable(schema)).fields()) {
      if (field.name().equals(LakecatScan.FILE)) {
        file.add(field);
      } else if (field.name().equals(LakecatScan.POS)) {
        pos = true;
        data.add(rowIndex());
      } else {
        data.add(field);
      }
      names.add(field.name().equals(LakecatScan.POS) ? ROW_INDEX : field.name());
    }
    boolean rowIds = names.contains(LakecatTable.ROW_ID);
    if (!pos && (rowIds || files.stream().anyMatch(f -> f.deleted != null))) {
      data.add(rowIndex()); // read to drop deleted rows or number row ids, then left out
    }
    this.dataSchema = new StructType(data.toArray(new StructField[0]));
    this.fileSchema = new StructType(file.toArray(new StructField[0]));
    this.output = names;
    List<Filter> onFiles = new ArrayList<>();
    for (Predicate predicate : predicates) {
      conjuncts(predicate, this.dataSchema, onFiles);
    }
    this.filters = onFiles.toArray(new Filter[0]);
  }

  private static StructField rowIndex() {
    return new StructField(ROW_INDEX, DataTypes.LongType, true, Metadata.empty());
  }

  /**
   * The conjuncts of {@code predicate} that have an exact data source form and name only the
   * files' own columns, for row-group pruning. Spark's {@code PredicateUtils.toV1} keeps one side
   * of an {@code OR} whose other side has no such form (and so negates half an {@code AND} under
   * a {@code NOT}): a stronger filter, which would skip row groups holding matching rows.
   */
  private static void conjuncts(Predicate predicate, StructType schema, List<Filter> out) {
    if (predicate instanceof And) {
      conjuncts(((And) predicate).left(), schema, out);
      conjuncts(((And) predicate).right(), schema, out);
      return;
    }
    Filter filter =
        readsRowIds(predicate) || readsFloats(predicate, schema) ? null : exact(predicate);
    if (filter != null) {
      out.add(filter);
    }
  }

  /** {@code predicate} as a data source filter that holds exactly where it holds; or null. */
  private static Filter exact(Predicate predicate) {
    if (predicate instanceof And || predicate instanceof Or) {
      Predicate[] sides =
          predicate instanceof And
              ? new Predicate[] {((And) predicate).left(), ((And) predicate).right()}
              : new Predicate[] {((Or) predicate).left(), ((Or) predicate).right()};
      Filter left = exact(sides[0]);
      Filter right = exact(sides[1]);
      if (left == null || right == null) {
        return null;
      }
      return predicate instanceof And
          ? new org.apache.spark.sql.sources.And(left, right)
          : new org.apache.spark.sql.sources.Or(left, right);
    }
    if (predicate instanceof Not) {
      Filter child = exact(((Not) predicate).child());
      return child == null ? null : new org.apache.spark.sql.sources.Not(child);
    }
    for (org.apache.spark.sql.connector.expressions.Expression child : predicate.children()) {
      if (child instanceof Predicate) {
        return null; // a predicate over predicates this does not know
      }
    }
    scala.Option<Filter> filter = PredicateUtils.toV1(predicate);
    return filter.isDefined() ? filter.get() : null;
  }

  /**
   * Whether {@code predicate} names a float or double column (or one the schema does not have).
   * Parquet writers leave NaN out of a column's statistics, and Spark orders NaN above every
   * number ({@code NaN > 5}, {@code NaN = NaN} and {@code NaN <> 0} hold), so pruning by them
   * would skip row groups whose NaN rows match.
   */
  private static boolean readsFloats(Predicate predicate, StructType schema) {
    for (NamedReference ref : predicate.references()) {
      DataType type = schema;
      for (String name : ref.fieldNames()) {
        if (!(type instanceof StructType) || !((StructType) type).getFieldIndex(name).isDefined()) {
          return true;
        }
        type = ((StructType) type).apply(name).dataType();
      }
      if (type instanceof FloatType || type instanceof DoubleType) {
        return true;
      }
    }
    return false;
  }

  /** Whether {@code predicate} names a metadata column ({@code _file}, {@code _pos}, lineage). */
  private static boolean readsRowIds(Predicate predicate) {
    for (NamedReference ref : predicate.references()) {
      String[] names = ref.fieldNames();
      if (names.length == 1 && METADATA_COLUMNS.contains(names[0])) {
        return true;
      }
    }
    return false;
  }

  // Columns whose values are not (all) the files': never used to skip row groups. The lineage
  // columns a file stores may be null where the reader assigns them, or absent (all null).
  private static final java.util.Set<String> METADATA_COLUMNS =
      java.util.Set.of(
          LakecatScan.FILE, LakecatScan.POS, LakecatTable.ROW_ID, LakecatTable.LAST_UPDATED);

  private static org.apache.spark.sql.classic.SparkSession session() {
    return (org.apache.spark.sql.classic.SparkSession) org.apache.spark.sql.SparkSession.active();
  }

  @Override
  public InputPartition[] planInputPartitions() {
    org.apache.spark.sql.classic.SparkSession session = session();
    SQLConf conf = session.sessionState().conf();
    long openCost = conf.filesOpenCostInBytes();
    long total = 0;
    for (NativeFile file : files) {
      total += file.size + openCost;
    }
    long maxSplit = maxSplitBytes(session, conf, total);
    if (files.isEmpty() || files.get(0).key == null) {
      return packed(session, files, maxSplit).toArray(new InputPartition[0]);
    }
    // grouped by partition (DataGrouping): each task reads splits of one key's files only
    Map<InternalRow, List<NativeFile>> byKey = new LinkedHashMap<>();
    for (NativeFile file : files) {
      byKey.computeIfAbsent(file.key, k -> new ArrayList<>()).add(file);
    }
    List<InputPartition> out = new ArrayList<>();
    for (Map.Entry<InternalRow, List<NativeFile>> group : byKey.entrySet()) {
      for (FilePartition partition : packed(session, group.getValue(), maxSplit)) {
        out.add(
            new DataGrouping.KeyedFilePartition(out.size(), partition.files(), group.getKey()));
      }
    }
    return out.toArray(new InputPartition[0]);
  }

  /** {@code read}'s splits packed into tasks as Spark packs a Parquet table's files. */
  private List<FilePartition> packed(
      org.apache.spark.sql.classic.SparkSession session, List<NativeFile> read, long maxSplit) {
    List<PartitionedFile> splits = new ArrayList<>();
    scala.collection.immutable.Map<String, Object> noMetadata =
        scala.collection.immutable.Map$.MODULE$.empty();
    boolean withFile = !fileSchema.isEmpty();
    for (NativeFile file : read) {
      SparkPath path = SparkPath.fromUrlString(file.uri);
      long size = file.size;
      InternalRow values =
          withFile
              ? new GenericInternalRow(new Object[] {UTF8String.fromString(file.path)})
              : InternalRow.empty();
      for (long start = 0; start < size; start += maxSplit) {
        long length = Math.min(maxSplit, size - start);
        splits.add(
            new PartitionedFile(values, path, start, length, new String[0], 0L, size, noMetadata));
      }
    }
    splits.sort(Comparator.comparingLong(PartitionedFile::length).reversed());
    scala.collection.immutable.Seq<FilePartition> partitions =
        FilePartition.getFilePartitions(
            session, CollectionConverters.asScala(splits).toSeq(), maxSplit);
    return CollectionConverters.asJava(partitions);
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

  private PartitionReaderFactory readerFactory;

  /**
   * The reader factory, made once per batch: Spark asks every copy of its scan node for it
   * while it plans (whether the reads are columnar). It reads with the reader's Hadoop
   * configuration broadcast, shared with earlier scans of the same configuration ({@link
   * ConfBroadcasts}).
   */
  @Override
  public synchronized PartitionReaderFactory createReaderFactory() {
    if (readerFactory == null) {
      readerFactory = newReaderFactory();
    }
    return readerFactory;
  }

  private PartitionReaderFactory newReaderFactory() {
    org.apache.spark.sql.classic.SparkSession session = session();
    SQLConf conf = session.sessionState().conf();
    Configuration hadoop = session.sessionState().newHadoopConf();
    String json = dataSchema.json();
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
        ConfBroadcasts.of(session.sparkContext(), hadoop);
    scala.collection.immutable.Map<String, String> options =
        scala.collection.immutable.Map$.MODULE$.empty();
    for (Map.Entry<String, String> entry : new HashMap<>(READ_OPTIONS).entrySet()) {
      options = options.updated(entry.getKey(), entry.getValue());
    }
    PartitionReaderFactory factory =
        new ParquetPartitionReaderFactory(
            conf,
            broadcast,
            dataSchema,
            dataSchema,
            fileSchema,
            filters,
            scala.Option.empty(),
            new ParquetOptions(options, conf));
    // Spark yields [file columns..., row index?, _file?]; the scan's schema may differ
    StructType produced = dataSchema;
    for (StructField field : fileSchema.fields()) {
      produced = produced.add(field);
    }
    List<String> producedNames = java.util.Arrays.asList(produced.fieldNames());
    int[] order = new int[output.size()];
    boolean same = order.length == producedNames.size();
    for (int i = 0; i < order.length; i++) {
      order[i] = producedNames.indexOf(output.get(i));
      same &= order[i] == i;
    }
    int rowIdOut = output.indexOf(LakecatTable.ROW_ID);
    int sequenceOut = output.indexOf(LakecatTable.LAST_UPDATED);
    boolean lineage = rowIdOut >= 0 || sequenceOut >= 0;
    Map<String, PerFileReaders.FileRows> byUri = new HashMap<>();
    for (NativeFile file : files) {
      Long first = lineage ? file.firstRowId : null;
      if (file.deleted != null || first != null) {
        byUri.put(
            SparkPath.fromUrlString(file.uri).urlEncoded(),
            new PerFileReaders.FileRows(file.deleted, first, file.sequenceNumber));
      }
    }
    if (!byUri.isEmpty()) {
      return new PerFileReaders(
          factory,
          order,
          produced,
          producedNames.indexOf(ROW_INDEX),
          rowIdOut,
          sequenceOut,
          byUri,
          PerFileReaders.movesKeptRows(conf));
    }
    return same ? factory : new ReorderedReaders(factory, order, produced);
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
