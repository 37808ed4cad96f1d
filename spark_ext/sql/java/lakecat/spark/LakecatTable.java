package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.connector.catalog.SupportsDeleteV2;
import org.apache.spark.sql.connector.catalog.SupportsMetadataColumns;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsRowLevelOperations;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.filter.AlwaysTrue;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MetadataBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A lakecat table as the Python catalog described it, read and written through the Python
 * data source it names. Reads get the descriptor's read options (table, time travel) merged
 * under the query's options; writes get the write options (the table) added to the write
 * command's own, since Spark hands a Python writer only those.
 *
 * <p>A data table's reads go through {@link LakecatScanBuilder} (Spark pushes filters and
 * columns to the JVM; the Python data source reads what it chose); a metadata table's go
 * to its Python data source with the columns the query uses ({@link MetadataScanBuilder}).
 * {@code UPDATE}, {@code MERGE INTO} and the {@code DELETE}s that are not metadata-only run as
 * copy-on-write rewrites ({@link LakecatCopyOnWrite}).
 */
final class LakecatTable extends DescribedTable
    implements SupportsRead,
        SupportsWrite,
        SupportsDeleteV2,
        SupportsMetadataColumns,
        SupportsRowLevelOperations {
  LakecatTable(BridgeClient bridge, JsonNode descriptor) {
    super(bridge, descriptor);
  }

  @Override
  public Set<TableCapability> capabilities() {
    Set<TableCapability> out = EnumSet.of(TableCapability.BATCH_READ);
    if (dataTable() && writable() && branch() == null) { // the main branch of a data table
      out.add(TableCapability.MICRO_BATCH_READ);
    }
    if (writable()) {
      out.add(TableCapability.BATCH_WRITE);
      out.add(TableCapability.V1_BATCH_WRITE); // appends and overwrites: NativeInsert
      out.add(TableCapability.STREAMING_WRITE);
      out.add(TableCapability.TRUNCATE);
      out.add(TableCapability.OVERWRITE_BY_FILTER);
      out.add(TableCapability.OVERWRITE_DYNAMIC);
      if (dataTable()) {
        // MERGE WITH SCHEMA EVOLUTION: Spark adds the source's new columns (alterTable) first
        out.add(TableCapability.AUTOMATIC_SCHEMA_EVOLUTION);
      }
    }
    return out;
  }

  /** The branch a {@code t.branch_<name>} table writes to; null for the table itself. */
  private String branch() {
    JsonNode branch = descriptor.get("branch");
    return branch == null || branch.isNull() ? null : branch.asText();
  }

  private boolean writable() {
    return descriptor.path("write_options").isObject();
  }

  /** A data table (read through {@link LakecatScanBuilder}), not a metadata table. */
  private boolean dataTable() {
    return descriptor.path("data_table").asBoolean(false);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    Map<String, String> merged = readOptions(options);
    if (dataTable()) {
      return new LakecatScanBuilder(this, merged, null);
    }
    return new MetadataScanBuilder(this, new CaseInsensitiveStringMap(merged));
  }

  /** The descriptor's read options (the table, its metadata file, time travel), then the query's. */
  Map<String, String> readOptions(CaseInsensitiveStringMap options) {
    Map<String, String> merged = new HashMap<>(descriptorReadOptions());
    merged.putAll(options.asCaseSensitiveMap());
    return merged;
  }

  /** The metadata file this data table was loaded at; null for a metadata table. */
  String metadataLocation() {
    return dataTable() ? descriptorReadOptions().get("metadata-location") : null;
  }

  Map<String, String> descriptorReadOptions() {
    return Names.map(descriptor.get("read_options"));
  }

  /** The Python data source's scan of exactly these columns, with these read options. */
  Scan delegateScan(StructType columns, CaseInsensitiveStringMap options) {
    Table table = provider().getTable(columns, partitioning, properties);
    return ((SupportsRead) table).newScanBuilder(options).build();
  }

  /** {"filter": lakecat filter text, "used": [indexes of the predicates it holds]}. */
  JsonNode scanFilter(Map<String, String> options, Predicate[] predicates) {
    ObjectNode args = bridge.args();
    args.set("read_options", Names.object(options));
    args.set("predicates", SparkJson.expressions(predicates));
    return bridge.call("scan_filter", args);
  }

  /**
   * Aggregates of a read under this lakecat filter answered from its files' metrics: the
   * bridge's {@code aggregate} ({@code values}, null when the metrics do not decide them).
   */
  JsonNode aggregate(Map<String, String> options, String filter, ArrayNode aggregates) {
    ObjectNode args = bridge.args();
    args.set("read_options", Names.object(options));
    args.put("filter", filter);
    args.set("aggregates", aggregates);
    return bridge.call("aggregate", args);
  }

  /** lakecat's plan of a read of these top-level columns under this lakecat filter. */
  JsonNode planScan(
      Map<String, String> options,
      String filter,
      String[] columns,
      boolean group,
      int[] groupFields) {
    ObjectNode args = bridge.args();
    args.set("read_options", Names.object(options));
    args.put("filter", filter);
    ArrayNode names = args.putArray("columns");
    for (String column : columns) {
      names.add(column);
    }
    args.put("group", group);
    if (groupFields != null) {
      ArrayNode ids = args.putArray("group_fields");
      for (int id : groupFields) {
        ids.add(id);
      }
    }
    return bridge.call("plan_scan", args);
  }

  // ---- metadata columns and row-level operations -------------------------------------------
  @Override
  public MetadataColumn[] metadataColumns() {
    if (!dataTable()) {
      return new MetadataColumn[0];
    }
    List<MetadataColumn> columns = new ArrayList<>();
    // constants of the row's file: its partition spec's id and its partition over every spec
    // (Iceberg's partition type; a table without partition fields has no _partition)
    columns.add(new Column(SPEC_ID, DataTypes.IntegerType, false, false, true, true));
    JsonNode partitionType = descriptor.path("partition_type");
    if (partitionType.isTextual()) {
      columns.add(
          new Column(
              PARTITION, DataType.fromJson(partitionType.asText()), true, false, true, true));
    }
    // a row's id: kept on delete and update (Spark's defaults), so that deltas name the row
    columns.add(new Column(LakecatScan.FILE, DataTypes.StringType, false, false, true, true));
    columns.add(new Column(LakecatScan.POS, DataTypes.LongType, false, false, true, true));
    if (rowLineage()) {
      // as Iceberg's Spark runtime: an updated or re-inserted row keeps its id; its sequence
      // number becomes the commit's
      columns.add(new Column(ROW_ID, DataTypes.LongType, true, true, true, false));
      columns.add(new Column(LAST_UPDATED, DataTypes.LongType, true, false, false, false));
    }
    return columns.toArray(new MetadataColumn[0]);
  }

  static final String SPEC_ID = "_spec_id";
  static final String PARTITION = "_partition";
  static final String ROW_ID = "_row_id";
  static final String LAST_UPDATED = "_last_updated_sequence_number";

  /** The names of every metadata column a data table may offer. */
  static final java.util.Set<String> METADATA_COLUMNS =
      java.util.Set.of(SPEC_ID, PARTITION, LakecatScan.FILE, LakecatScan.POS, ROW_ID, LAST_UPDATED);

  /** Format v3: rows carry lineage, which copy-on-write rewrites must keep. */
  boolean rowLineage() {
    return descriptor.path("row_lineage").asBoolean(false);
  }

  @Override
  public RowLevelOperationBuilder newRowLevelOperationBuilder(RowLevelOperationInfo info) {
    if (!writable() || !dataTable()) {
      throw new UnsupportedOperationException(name() + " is read-only");
    }
    wapProperties(); // refuses a session's conflicting WAP settings before anything runs
    boolean mergeOnRead = mergeOnRead(info.command());
    return new RowLevelOperationBuilder() {
      @Override
      public RowLevelOperation build() {
        if (mergeOnRead) {
          return new LakecatMergeOnRead(LakecatTable.this, info);
        }
        return new LakecatCopyOnWrite(LakecatTable.this, info);
      }
    };
  }

  /**
   * Whether {@code command} runs merge-on-read on this table: its {@code write.<command>.mode}
   * as the Python side reads it (the table's descriptor), so that SQL and lakecat's Python API
   * agree; a value that is not a mode is refused before anything runs, as Iceberg refuses it.
   */
  private boolean mergeOnRead(RowLevelOperation.Command command) {
    JsonNode mode =
        descriptor.path("row_level_modes").path(command.name().toLowerCase(Locale.ROOT));
    if (mode.has("error")) {
      throw refused(mode.get("error").asText());
    }
    return "merge-on-read".equals(mode.path("mode").asText());
  }

  /**
   * The staged write of a copy-on-write operation that read through {@code scan}. With row
   * lineage the Python writer also takes {@code _row_id} and {@code
   * _last_updated_sequence_number}, which Spark hands over as the rows' metadata ({@link
   * ChunkedWriterFactory} joins them).
   */
  Write rowLevelWrite(
      LogicalWriteInfo info, RowLevelOperation.Command command, LakecatScan.RowLevel scan) {
    Staged staged = stagedWrite(info, beginRowLevel(null));
    return new LakecatRowLevelWrite(
        this, staged.write, command, scan, staged.stageTo, staged.layout, staged.options);
  }

  /** The delta write of a merge-on-read operation that read through {@code scan}. */
  LakecatDeltaWrite deltaWrite(
      LogicalWriteInfo info, RowLevelOperation.Command command, LakecatScan.RowLevel scan) {
    SparkSession session = (SparkSession) org.apache.spark.sql.SparkSession.active();
    JsonNode staging =
        beginRowLevel(NativeRowLevelWrites.enabled(session) ? info.schema() : null);
    StructType rowId = info.rowIdSchema().orElse(new StructType());
    int file = rowId.fieldIndex(LakecatScan.FILE);
    int pos = rowId.fieldIndex(LakecatScan.POS);
    String stageTo = staging.get("stage_to").asText();
    if (staging.hasNonNull("native_rows")) {
      JsonNode plan = staging.get("native_rows");
      if (plan.path("lineage").asBoolean(false) != rowLineage()) {
        throw new IllegalStateException("lakecat: the bridge planned the rows' lineage otherwise");
      }
      NativeRows rows = NativeRows.plan(plan, session);
      return new LakecatDeltaWrite(
          this, null, rows, command, scan, stageTo, layout(info), file, pos);
    }
    Staged staged = stagedWrite(info, staging);
    return new LakecatDeltaWrite(
        this, staged.write, null, command, scan, stageTo, staged.layout, file, pos);
  }

  /**
   * The bridge's {@code begin_row_level}: where the staged write hands its files over and its
   * options; with the Spark schema of a merge-on-read statement's new rows, also whether the
   * tasks write them natively ({@code native_rows}, {@link NativeRows}).
   */
  private JsonNode beginRowLevel(StructType deltaRows) {
    ObjectNode args = identifierArgs();
    args.set("read_options", Names.object(descriptorReadOptions()));
    if (deltaRows != null) {
      args.put("delta_schema", deltaRows.json());
    }
    return bridge.call("begin_row_level", args);
  }

  /** The Python data source's write in staging mode, and how rows reach it. */
  private Staged stagedWrite(LogicalWriteInfo info, JsonNode staging) {
    Map<String, String> options = new HashMap<>(Names.map(descriptor.get("write_options")));
    options.putAll(Names.map(staging.get("write_options")));
    ChunkedWriterFactory.Layout layout = layout(info);
    Write write =
        new LakecatWriteBuilder(this, (SupportsWrite) delegate(), info, options, layout.written)
            .dataSourceWrite();
    return new Staged(write, staging.get("stage_to").asText(), layout, options);
  }

  /**
   * The rows a row-level write writes: Spark's rows, then (with row lineage) {@code _row_id}
   * and {@code _last_updated_sequence_number} from Spark's metadata rows.
   */
  private ChunkedWriterFactory.Layout layout(LogicalWriteInfo info) {
    StructType written = info.schema();
    StructType metadata = info.metadataSchema().orElse(new StructType());
    List<Integer> lineage = new ArrayList<>();
    if (rowLineage()) {
      for (String column : new String[] {ROW_ID, LAST_UPDATED}) {
        int index = Arrays.asList(metadata.fieldNames()).indexOf(column);
        if (index < 0) {
          throw new IllegalStateException("lakecat: Spark did not pass " + column + " to the write");
        }
        lineage.add(index);
        written = written.add(column, DataTypes.LongType, true);
      }
    }
    return new ChunkedWriterFactory.Layout(written, metadata, lineage);
  }

  private static final class Staged {
    final Write write;
    final String stageTo;
    final ChunkedWriterFactory.Layout layout;
    final Map<String, String> options; // the staged write's options

    Staged(
        Write write,
        String stageTo,
        ChunkedWriterFactory.Layout layout,
        Map<String, String> options) {
      this.write = write;
      this.stageTo = stageTo;
      this.layout = layout;
      this.options = options;
    }
  }

  /**
   * The arguments of a row-level operation's commit call (the files its scan read). Without a
   * scan (Spark optimized the read away: {@link LakecatRowLevelOperation}) the statement read
   * no file and no row can conflict with it: filter {@code false}, no files.
   */
  ObjectNode rowLevelCommitArgs(
      RowLevelOperation.Command command, LakecatScan.RowLevel scan, String stageTo) {
    ObjectNode args = identifierArgs();
    args.put("command", command.name().toLowerCase(Locale.ROOT));
    args.put("filter", scan == null ? "false" : scan.filter);
    args.put("stage_to", stageTo);
    ArrayNode files = args.putArray("files");
    if (scan != null) {
      scan.files().forEach(files::add);
    }
    args.set("read_options", Names.object(descriptorReadOptions()));
    args.set("snapshot_properties", Names.object(wapProperties()));
    if (newBranch() != null) {
      args.put("new_branch", newBranch());
    }
    return args;
  }

  static final String WAP_ENABLED = "write.wap.enabled";
  static final String WAP_ID = "spark.wap.id";
  static final String WAP_BRANCH = "spark.wap.branch";

  /**
   * Iceberg's write-audit-publish: on a table with {@value #WAP_ENABLED}, a write in a session
   * with {@value #WAP_ID} set records that id in its snapshot summary ({@code wap.id}), and
   * the commit then stages its snapshot instead of moving the branch (lakecat's commit core);
   * {@code CALL system.publish_changes} makes it current. Empty otherwise.
   *
   * <p>Iceberg's other form, {@value #WAP_BRANCH} (writes go to the branch the session names,
   * created at main's head by the first one), is in the descriptor: the catalog loaded the
   * table at that branch ({@code wap_branch}; {@code new_branch} while it does not exist).
   * Here, as Iceberg's {@code SparkWriteConf.branch()}, a write is refused when the session
   * sets both, when it writes a {@code t.branch_<name>} table, or when the session's branch is
   * not the one the table was loaded with.
   */
  Map<String, String> wapProperties() {
    Map<String, String> out = new HashMap<>();
    if (!"true".equalsIgnoreCase(properties().getOrDefault(WAP_ENABLED, ""))) {
      return out;
    }
    String id = sessionConf(WAP_ID);
    String branch = sessionConf(WAP_BRANCH);
    String loaded = wapBranch();
    if (branch != null) {
      if (id != null) {
        throw refused(
            "Cannot set both WAP ID and branch, but got ID ["
                + id
                + "] and branch ["
                + branch
                + "]: nothing was written to "
                + name());
      }
      if (branch() != null) {
        throw refused(
            "Cannot write to both branch and WAP branch, but got branch ["
                + branch()
                + "] and WAP branch ["
                + branch
                + "]: nothing was written to "
                + name());
      }
    }
    if (branch() == null && !java.util.Objects.equals(branch, loaded)) {
      throw refused(
          WAP_BRANCH
              + " is "
              + (branch == null ? "unset" : "'" + branch + "'")
              + " but "
              + name()
              + " was loaded with "
              + (loaded == null ? "none" : "'" + loaded + "'")
              + ": nothing was written; run the statement again");
    }
    if (id != null) {
      out.put("wap.id", id);
    }
    return out;
  }

  /** The session's write-audit-publish branch the table was loaded at; null: none. */
  private String wapBranch() {
    JsonNode branch = descriptor.get("wap_branch");
    return branch == null || branch.isNull() ? null : branch.asText();
  }

  /** The session's WAP branch while it does not exist: the first write creates it. */
  private String newBranch() {
    JsonNode branch = descriptor.get("new_branch");
    return branch == null || branch.isNull() ? null : branch.asText();
  }

  /** A session setting, trimmed; null when unset, empty or without an active session. */
  static String sessionConf(String key) {
    scala.Option<org.apache.spark.sql.SparkSession> session =
        org.apache.spark.sql.SparkSession.getActiveSession();
    if (session.isEmpty()) {
      return null;
    }
    String value = session.get().conf().get(key, "").trim();
    return value.isEmpty() ? null : value;
  }

  static RuntimeException refused(String message) {
    return BridgeClient.rethrow(
        new LakecatException(
            "ValidationError", "lakecat.metadata.errors.ValidationError", message, "{}", null));
  }

  /** The batch of a Python data source's write, its failure as a lakecat error. */
  BatchWrite batchOf(Write write) {
    try {
      return write.toBatch();
    } catch (Exception e) {
      throw BridgeClient.rethrow(translate(e));
    }
  }

  BridgeClient bridge() {
    return bridge;
  }

  ObjectNode identifierArgs() {
    ObjectNode args = bridge.args();
    args.setAll((ObjectNode) descriptor.get("identifier"));
    return args;
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    if (!writable()) {
      throw new UnsupportedOperationException(name() + " is read-only");
    }
    return new LakecatWriteBuilder(
        this,
        (SupportsWrite) delegate(),
        info,
        Names.map(descriptor.get("write_options")),
        info.schema());
  }

  /** A failure of the Python data source, as a lakecat error when it is one. */
  Exception translate(Exception failure) {
    return bridge.translate(failure);
  }

  Map<String, String> dynamicOverwriteOptions() {
    return Names.map(descriptor.get("dynamic_overwrite_options"));
  }

  /**
   * {"options": {...}} for an overwrite by these predicates; a {@link LakecatException}
   * (UnsupportedByCatalog) for predicates lakecat cannot evaluate as Spark does.
   */
  JsonNode overwriteFilter(Predicate[] predicates) {
    return bridge.call("overwrite_filter", predicateArgs(predicates));
  }

  // ---- DELETE FROM -----------------------------------------------------------------------
  /**
   * Whether a {@code DELETE FROM} runs as lakecat's delete on the driver ({@link #deleteWhere}):
   * when lakecat evaluates its condition and the files it would read are at most the session's
   * {@link #DRIVER_DELETE_SETTING} bytes (default 128 MiB; the bridge's {@code can_delete}
   * decides); else Spark plans it as a row-level operation whose rows are read and written in
   * tasks. A delete that drops whole files only always runs on the driver.
   */
  @Override
  public boolean canDeleteWhere(Predicate[] predicates) {
    if (!writable()) {
      return false;
    }
    ObjectNode args = predicateArgs(predicates);
    String limit = sessionConf(DRIVER_DELETE_SETTING);
    if (limit != null) {
      args.put("max_read_bytes", limit);
    }
    return bridge.call("can_delete", args).asBoolean();
  }

  static final String DRIVER_DELETE_SETTING = "spark.lakecat.driverDeleteMaxBytes";

  /**
   * {@code TRUNCATE TABLE}: every row deleted in one commit, as {@code DELETE FROM} without a
   * condition. Spark's default asks {@link #canDeleteWhere} first and silently does nothing when
   * it says no, so a relation that cannot be written (a time-travel read, a tag, a metadata
   * table) is refused here instead.
   */
  @Override
  public boolean truncateTable() {
    if (!writable() || !dataTable()) {
      throw new UnsupportedOperationException(name() + " is read-only");
    }
    deleteWhere(new Predicate[] {new AlwaysTrue()});
    return true;
  }

  @Override
  public void deleteWhere(Predicate[] predicates) {
    ObjectNode args = predicateArgs(predicates);
    args.set("snapshot_properties", Names.object(wapProperties()));
    if (newBranch() != null) {
      args.put("create_branch", true);
    }
    bridge.call("delete", args);
  }

  /**
   * The table's identifier, the predicates and the branch written: {@code t.branch_<name>}'s,
   * or the session's WAP branch.
   */
  private ObjectNode predicateArgs(Predicate[] predicates) {
    ObjectNode args = identifierArgs();
    args.set("predicates", SparkJson.expressions(predicates));
    String branch = branch() != null ? branch() : wapBranch();
    if (branch != null) {
      args.put("branch", branch);
    }
    return args;
  }

  /** A metadata column of a lakecat table, with Spark's row-level preservation flags. */
  private static final class Column implements MetadataColumn {
    private final String name;
    private final DataType type;
    private final boolean nullable;
    private final boolean onReinsert;
    private final boolean onUpdate;
    private final boolean onDelete;

    Column(
        String name,
        DataType type,
        boolean nullable,
        boolean onReinsert,
        boolean onUpdate,
        boolean onDelete) {
      this.name = name;
      this.type = type;
      this.nullable = nullable;
      this.onReinsert = onReinsert;
      this.onUpdate = onUpdate;
      this.onDelete = onDelete;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public DataType dataType() {
      return type;
    }

    @Override
    public boolean isNullable() {
      return nullable;
    }

    @Override
    public String metadataInJSON() {
      return new MetadataBuilder()
          .putBoolean(MetadataColumn.PRESERVE_ON_REINSERT, onReinsert)
          .putBoolean(MetadataColumn.PRESERVE_ON_UPDATE, onUpdate)
          .putBoolean(MetadataColumn.PRESERVE_ON_DELETE, onDelete)
          .build()
          .json();
    }
  }
}
