package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.colstats.ColumnStatistics;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportPartitioning;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.partitioning.KeyGroupedPartitioning;
import org.apache.spark.sql.connector.read.partitioning.Partitioning;
import org.apache.spark.sql.connector.read.partitioning.UnknownPartitioning;
import org.apache.spark.sql.connector.read.SupportsRuntimeV2Filtering;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * One read of a lakecat table: the columns Spark needs (the metadata columns {@code _file} and
 * {@code _pos} last, in this order, as the Python reader yields them) and the files the pushed
 * filters choose. lakecat plans the read once ({@link Plan}): when Spark's own Parquet reader
 * reads the files as lakecat would (no equality deletes, no lineage columns, names that agree
 * with the field ids: the Python side decides), they are read by it ({@link ParquetBatch});
 * else the rows are read by the Python data source, asked for exactly these columns and
 * planning with the same filter. The description (what {@code EXPLAIN} prints) names the
 * filters Spark pushed, the lakecat filter they make, the reader ({@code parquet} or {@code
 * lakecat}), the number of files chosen and, when the files are grouped by partition for
 * Spark ({@link #outputPartitioning}), the transforms of the key. A row-level operation's read
 * ({@link RowLevel}) fixes its files, which Spark's runtime group filter narrows to those
 * holding affected rows ({@code _file IN (...)}) before anything is read; they are read by the
 * reader the plan chose, as for any read.
 */
class LakecatScan
    implements Scan,
        SupportsRuntimeV2Filtering,
        SupportsReportStatistics,
        SupportsReportPartitioning {
  static final String FILE = "_file";
  static final String POS = "_pos";
  static final String PRUNE_FILTER = "prune-filter"; // read option: plan files with it
  static final String FILES = "files"; // read option: JSON list of the data files to read

  final LakecatTable table;
  private final Map<String, String> options;
  private final StructType readSchema;
  volatile String filter; // narrowed by Spark's runtime filters (dynamic partition pruning)
  private final Predicate[] pushed;
  private final Predicate[] predicates; // all Spark pushed: Parquet's row-group pruning takes them

  LakecatScan(
      LakecatTable table,
      Map<String, String> options,
      StructType required,
      String filter,
      Predicate[] pushed,
      Predicate[] predicates) {
    this.table = table;
    this.options = options;
    this.readSchema = readSchema(required);
    this.filter = filter;
    this.pushed = pushed;
    this.predicates = predicates;
  }

  /** The required columns, the metadata columns last ({@code _file} before {@code _pos}). */
  private static StructType readSchema(StructType required) {
    List<StructField> fields = new ArrayList<>();
    boolean file = false;
    boolean pos = false;
    for (StructField field : required.fields()) {
      if (field.name().equals(FILE)) {
        file = true;
      } else if (field.name().equals(POS)) {
        pos = true;
      } else {
        fields.add(field);
      }
    }
    if (file) {
      fields.add(DataTypes.createStructField(FILE, DataTypes.StringType, false));
    }
    if (pos) {
      fields.add(DataTypes.createStructField(POS, DataTypes.LongType, false));
    }
    return DataTypes.createStructType(fields);
  }

  @Override
  public StructType readSchema() {
    return readSchema;
  }

  private Plan planned;

  // Whether the first plan grouped the files by partition, and by which fields: Spark takes
  // the scan's partitioning once, so a plan made again after a runtime filter keeps it.
  private Boolean grouped;
  private int[] groupFields;

  /** lakecat's plan of this read (asked when first needed). */
  synchronized Plan plan() {
    if (planned == null) {
      boolean group = grouped == null ? DataGrouping.asked() : grouped;
      planned =
          new Plan(table.planScan(options, filter, readSchema.fieldNames(), group, groupFields));
      if (grouped == null) {
        grouped = planned.grouping != null;
        groupFields = grouped ? planned.grouping.fieldIds : null;
      }
    }
    return planned;
  }

  /**
   * With {@code spark.lakecat.preserveDataGrouping} on, and where Spark's Parquet reader reads
   * the files, how the rows are grouped: by the partition transforms the files share, each
   * task reading the files of one partition key ({@link DataGrouping}). Spark then joins or
   * aggregates by those keys without a shuffle (a storage-partitioned join). Else nothing.
   */
  @Override
  public Partitioning outputPartitioning() {
    Plan plan = plan();
    if (plan.grouping == null || streaming) {
      return new UnknownPartitioning(0);
    }
    // one partition per key once Spark groups the input partitions by key (as Iceberg
    // reports its task groups), without packing the files into input partitions here
    int keys = new HashSet<>(Arrays.asList(plan.grouping.keys)).size();
    return new KeyGroupedPartitioning(plan.grouping.transforms, keys);
  }

  /**
   * What the read holds, for Spark's optimizer (a join broadcasts a side estimated under {@code
   * spark.sql.autoBroadcastJoinThreshold}): the rows of the files the filter plans, as their
   * manifests record them (rows a delete file removes included), and their size in memory
   * estimated as Iceberg's runtime does, those rows times the default size of the columns read
   * ({@code StructType.defaultSize}); and the number of distinct values of each column read
   * that the snapshot's statistics file records.
   */
  @Override
  public Statistics estimateStatistics() {
    Plan plan = plan();
    long size;
    try {
      size = Math.multiplyExact(readSchema.defaultSize(), plan.rows);
    } catch (ArithmeticException e) {
      size = Long.MAX_VALUE;
    }
    Map<NamedReference, ColumnStatistics> columns = new HashMap<>();
    for (String name : readSchema.fieldNames()) {
      Long ndv = plan.ndvs.get(name);
      if (ndv != null) {
        columns.put(Expressions.column(name), new DistinctValues(ndv));
      }
    }
    return new Estimate(size, plan.rows, columns);
  }

  /** The statistics {@link #estimateStatistics} reports. */
  private static final class Estimate implements Statistics {
    private final long size;
    private final long rows;
    private final Map<NamedReference, ColumnStatistics> columns;

    Estimate(long size, long rows, Map<NamedReference, ColumnStatistics> columns) {
      this.size = size;
      this.rows = rows;
      this.columns = columns;
    }

    @Override
    public OptionalLong sizeInBytes() {
      return OptionalLong.of(size);
    }

    @Override
    public OptionalLong numRows() {
      return OptionalLong.of(rows);
    }

    @Override
    public Map<NamedReference, ColumnStatistics> columnStats() {
      return columns;
    }
  }

  /**
   * A column's number of distinct values, as the statistics file of the snapshot read records
   * it ({@code compute_table_stats}); Spark's cost-based optimizer uses it for join order and
   * sizes ({@code spark.sql.cbo.enabled}).
   */
  private static final class DistinctValues implements ColumnStatistics {
    private final long ndv;

    DistinctValues(long ndv) {
      this.ndv = ndv;
    }

    @Override
    public OptionalLong distinctCount() {
      return OptionalLong.of(ndv);
    }
  }

  /**
   * The partition source columns (top level) this scan reads: Spark's dynamic partition pruning
   * passes their values at run time ({@link #filter}). Spark resolves them against the scan's
   * output, so a column the query does not read is not offered.
   */
  @Override
  public NamedReference[] filterAttributes() {
    Set<String> read = new HashSet<>(Arrays.asList(readSchema.fieldNames()));
    Map<String, NamedReference> columns = new LinkedHashMap<>();
    for (Transform transform : table.partitioning()) {
      for (NamedReference ref : transform.references()) {
        String[] names = ref.fieldNames();
        if (names.length == 1 && read.contains(names[0])) {
          columns.putIfAbsent(names[0], ref);
        }
      }
    }
    return columns.values().toArray(new NamedReference[0]);
  }

  /**
   * Runtime filters (the partition values a join's other side holds): lakecat plans the read
   * again with them added to its filter, pruning files by partition values and metrics as for
   * any filter. Spark still evaluates the join on every row read, so this only skips files.
   */
  @Override
  public synchronized void filter(Predicate[] predicates) {
    JsonNode answer = table.scanFilter(options, predicates);
    if (answer.get("used").isEmpty()) {
      return;
    }
    filter = "(" + filter + ") AND (" + answer.get("filter").asText() + ")";
    planned = null;
  }

  /** The files this scan reads: those the filter plans. */
  List<String> files() {
    return plan().files;
  }

  private volatile boolean streaming;

  /** The reader of the rows: {@code parquet} (Spark's own) or {@code lakecat} (Python). */
  String reader() {
    return streaming ? "lakecat" : plan().reader;
  }

  /** The files option of the read (null: let the data source plan them). */
  List<String> filesOption() {
    return null;
  }

  @Override
  public String description() {
    String filters =
        Arrays.stream(pushed).map(Predicate::toString).collect(Collectors.joining(", ", "[", "]"));
    DataGrouping grouping = streaming ? null : plan().grouping;
    String grouped =
        grouping == null
            ? ""
            : Arrays.stream(grouping.transforms)
                .map(Transform::describe)
                .collect(Collectors.joining(", ", ", grouped-by=[", "]"));
    return "lakecat " + table.name() + " [filters=" + filters + ", lakecat-filter=" + filter
        + ", reader=" + reader() + ", files=" + files().size() + grouped + "]";
  }

  /** The predicates Spark pushed, for Parquet's row-group pruning. */
  Predicate[] pushedToFiles() {
    return predicates;
  }

  @Override
  public Batch toBatch() {
    List<String> files = filesOption();
    Plan plan = files == null ? plan() : null;
    if (plan != null && plan.nativeFiles != null) {
      return plan.nativeBatch(null, readSchema, predicates);
    }
    Map<String, String> read = new HashMap<>(options);
    read.put(PRUNE_FILTER, filter);
    if (files != null) {
      ArrayNode list = BridgeClient.JSON.createArrayNode();
      files.forEach(list::add);
      read.put(FILES, list.toString());
    }
    return table.delegateScan(readSchema, new CaseInsensitiveStringMap(read)).toBatch();
  }

  /** A stream of the rows appended to the table (the Python data source's stream reader). */
  @Override
  public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
    streaming = true;
    return TranslatingStream.of(
        table.bridge,
        table
            .delegateScan(readSchema, new CaseInsensitiveStringMap(options))
            .toMicroBatchStream(checkpointLocation));
  }

  @Override
  public String toString() {
    return description();
  }

  /** lakecat's plan of a read, as the bridge's {@code plan_scan} answers. */
  static final class Plan {
    final List<String> files;
    final long rows; // the files' rows and bytes, as their manifests record them
    final long bytes;
    final String reader;
    final Map<String, Long> ndvs = new HashMap<>(); // by top-level column name
    final List<NativeFile> nativeFiles; // null: the Python data source reads the files
    final DataGrouping grouping; // null: the files are not grouped by partition

    Plan(JsonNode answer) {
      files = Arrays.asList(Names.strings(answer.get("files")));
      rows = answer.get("rows").asLong();
      bytes = answer.get("bytes").asLong();
      reader = answer.get("reader").asText();
      JsonNode distinct = answer.path("ndvs");
      distinct.fieldNames().forEachRemaining(name -> ndvs.put(name, distinct.get(name).asLong()));
      JsonNode fast = answer.get("native");
      grouping = DataGrouping.parse(answer.get("grouping"));
      nativeFiles = fast == null || fast.isNull() ? null : NativeFile.parse(fast, grouping);
    }

    private ParquetBatch batch; // the last batch made, and the files it keeps
    private Set<String> batchKept;

    /**
     * Spark's Parquet batch over those of the native files that {@code kept} names (all), as
     * the scan reads them ({@code schema}, {@code predicates}: one scan's, the same each time).
     * Spark asks each copy of its scan node for the batch, so the batch last made for the same
     * files is answered again, with the reader factory it already made ({@link ParquetBatch}).
     */
    synchronized ParquetBatch nativeBatch(
        Set<String> kept, StructType schema, Predicate[] predicates) {
      if (batch != null && java.util.Objects.equals(kept, batchKept)) {
        return batch;
      }
      List<NativeFile> read = nativeFiles;
      if (kept != null) {
        read = read.stream().filter(f -> kept.contains(f.path)).collect(Collectors.toList());
      }
      batch = new ParquetBatch(read, schema, predicates);
      batchKept = kept;
      return batch;
    }
  }

  /**
   * The read of a row-level operation: the data files the pushed filters chose at the
   * operation's snapshot, narrowed by Spark's runtime filter on {@code _file}. For copy-on-write
   * the files it finally reads are the files the operation's commit replaces.
   */
  static final class RowLevel extends LakecatScan implements SupportsRuntimeV2Filtering {
    private List<String> files; // null: all the plan's
    private volatile boolean delta; // a merge-on-read operation's read

    RowLevel(
        LakecatTable table,
        Map<String, String> options,
        StructType required,
        String filter,
        Predicate[] pushed) {
      super(table, options, required, filter, pushed, pushed);
    }

    @Override
    synchronized List<String> files() {
      return files != null ? files : plan().files;
    }

    @Override
    List<String> filesOption() {
      return files();
    }

    /** The files left after Spark's runtime filter, read by the reader the plan chose. */
    @Override
    public Batch toBatch() {
      Plan plan = plan();
      if (plan.nativeFiles == null) {
        return super.toBatch();
      }
      return plan.nativeBatch(new HashSet<>(files()), readSchema(), pushedToFiles());
    }

    /**
     * Parquet's pruning by the pushed predicates skips row groups and pages none of whose rows
     * match. A merge-on-read operation's read needs only the matching rows; a copy-on-write
     * read must return every row of the files it reads, since the rows that do not match are
     * the rows it writes back: it prunes nothing inside a file.
     */
    @Override
    Predicate[] pushedToFiles() {
      return delta ? super.pushedToFiles() : new Predicate[0];
    }

    /** Marks this as the read of a merge-on-read operation ({@link #filterAttributes}). */
    void readForDelta() {
      delta = true;
    }

    /**
     * {@code _file}, for Spark's runtime filter: a job that reads the join keys of the planned
     * files and keeps the files holding a match. Copy-on-write needs it to choose the files it
     * rewrites. A merge-on-read operation's commit does not depend on the files read, so there
     * the filter only saves reading, and is offered only where it can ({@link #filterPays}).
     */
    @Override
    public NamedReference[] filterAttributes() {
      if (delta && !filterPays()) {
        return new NamedReference[0];
      }
      return new NamedReference[] {Expressions.column(FILE)};
    }

    /**
     * Rows of at least this many bytes on disk, on average over the planned files, for the
     * runtime filter to pay off in a merge-on-read statement (docs/spark-sql.md).
     */
    static final long FILTER_MIN_BYTES_PER_ROW = 32;

    /**
     * Whether Spark's runtime filter can save a merge-on-read statement more than it costs. Its
     * job reads and matches the condition's columns of every planned row, and the statement's
     * own scan then reads the chosen files again: all it saves is the rest of the columns of
     * the files without a match, which an UPDATE or MERGE reads whole. So it pays only on more
     * planned files than the application's cores (one wave of tasks reads those, filtered or
     * not) whose rows are wide next to their keys, taken as at least {@link
     * #FILTER_MIN_BYTES_PER_ROW} bytes on disk per row.
     */
    private boolean filterPays() {
      Plan plan = plan();
      int cores = SparkSession.active().sparkContext().defaultParallelism();
      return plan.files.size() > cores && plan.bytes >= FILTER_MIN_BYTES_PER_ROW * plan.rows;
    }

    @Override
    public synchronized void filter(Predicate[] predicates) {
      for (Predicate predicate : predicates) {
        Set<String> chosen = fileLiterals(predicate);
        if (chosen != null) {
          keep(chosen);
        }
      }
    }

    /**
     * Narrow the files read to those in {@code chosen}. Spark may filter twice (an UPDATE with
     * a subquery reads the same scan on both sides of a union): the narrower choice is kept.
     */
    synchronized void keep(Set<String> chosen) {
      List<String> current = files();
      List<String> kept = current.stream().filter(chosen::contains).collect(Collectors.toList());
      if (kept.size() < current.size()) {
        files = kept;
      }
    }

    /** The paths of {@code _file IN (...)} or {@code _file = ...}; null for other predicates. */
    private static Set<String> fileLiterals(Predicate predicate) {
      Expression[] children = predicate.children();
      boolean in = predicate.name().equals("IN") || predicate.name().equals("=");
      if (!in || children.length < 1 || !(children[0] instanceof NamedReference)) {
        return null;
      }
      String[] column = ((NamedReference) children[0]).fieldNames();
      if (column.length != 1 || !column[0].equals(FILE)) {
        return null;
      }
      Set<String> out = new LinkedHashSet<>();
      for (int i = 1; i < children.length; i++) {
        if (!(children[i] instanceof Literal)) {
          return null;
        }
        Object value = ((Literal<?>) children[i]).value();
        if (value != null) {
          out.add(value.toString());
        }
      }
      return out;
    }
  }
}
