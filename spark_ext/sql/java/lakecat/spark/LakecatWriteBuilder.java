package lakecat.spark;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsDynamicOverwrite;
import org.apache.spark.sql.connector.write.SupportsOverwriteV2;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Builds a catalog table's batch or streaming write with the table's identity and the overwrite
 * mode in its options: an append, a whole-table overwrite (truncate), an overwrite of the rows
 * matching a filter (which the Python side turns into lakecat's filter option) or a dynamic
 * partition overwrite. Batch appends, overwrites by filter and dynamic overwrites that {@link
 * NativeDynamicOverwrites} rewrote are {@link NativeInsert}s; other dynamic overwrites and
 * streaming writes are the Python data source's.
 */
final class LakecatWriteBuilder implements SupportsOverwriteV2, SupportsDynamicOverwrite {
  private final LakecatTable table;
  private final SupportsWrite delegate;
  private final LogicalWriteInfo info;
  private final Map<String, String> options = new HashMap<>();
  private final StructType schema;
  private boolean overwrite;
  private boolean dynamic;
  private final boolean rewritten; // by NativeDynamicOverwrites: a dynamic overwrite, natively

  /** {@code schema}: the rows the Python writer takes (the write command's, or more). */
  LakecatWriteBuilder(
      LakecatTable table,
      SupportsWrite delegate,
      LogicalWriteInfo info,
      Map<String, String> tableOptions,
      StructType schema) {
    this.table = table;
    this.schema = schema;
    this.delegate = delegate;
    this.info = info;
    this.options.putAll(info.options().asCaseSensitiveMap());
    this.options.putAll(tableOptions);
    // a dynamic partition overwrite made an append ({@link NativeDynamicOverwrites})
    this.rewritten =
        NativeDynamicOverwrites.TOKEN.equals(this.options.get(NativeDynamicOverwrites.OPTION));
    if (rewritten) {
      this.options.remove(NativeDynamicOverwrites.OPTION);
      overwriteDynamicPartitions();
    }
    // write-audit-publish: the session's WAP id, unless the write names its own
    table
        .wapProperties()
        .forEach((key, value) -> this.options.putIfAbsent(SNAPSHOT_PROPERTY + key, value));
  }

  static final String SNAPSHOT_PROPERTY = "snapshot-property."; // the data source's option

  @Override
  public WriteBuilder truncate() {
    overwrite = true;
    return this;
  }

  /**
   * Every condition: {@link #overwrite} refuses one lakecat cannot evaluate as Spark does, with
   * the reason (for a false answer here Spark's error names neither the table nor the reason).
   */
  @Override
  public boolean canOverwrite(Predicate[] predicates) {
    return true;
  }

  @Override
  public WriteBuilder overwrite(Predicate[] predicates) {
    options.putAll(Names.map(table.overwriteFilter(predicates).get("options")));
    overwrite = true;
    return this;
  }

  @Override
  public WriteBuilder overwriteDynamicPartitions() {
    options.putAll(table.dynamicOverwriteOptions());
    overwrite = true;
    dynamic = true;
    return this;
  }

  /**
   * An append, an overwrite (whole table, or by a filter) or a dynamic partition overwrite that
   * {@link NativeDynamicOverwrites} made an append as a {@link NativeInsert} (Spark's V1 write:
   * the rows as a DataFrame, written as {@code lk.write} writes one); a dynamic partition
   * overwrite Spark plans as such (without the extension) as the Python data source's write
   * (Spark has no V1 form of it).
   */
  @Override
  public Write build() {
    if (rewritten) {
      return new NativeInsert(table, new HashMap<>(options), true, this::dataSourceWrite);
    }
    if (dynamic) {
      return dataSourceWrite();
    }
    return new NativeInsert(table, new HashMap<>(options), overwrite, this::dataSourceWrite);
  }

  /** The Python data source's write (a row-level operation's staged write takes it too). */
  Write dataSourceWrite() {
    WriteBuilder builder = delegate.newWriteBuilder(new Info(info, options, schema));
    if (overwrite) {
      builder = ((SupportsTruncate) builder).truncate(); // the Python writer's overwrite=True
    }
    return new LakecatWrite(
        table.bridge(), builder.build(), WriteRequirements.of(table, "write", false));
  }

  /** The write command's info with the table's options added (and the writer's schema). */
  static final class Info implements LogicalWriteInfo {
    private final LogicalWriteInfo base;
    private final CaseInsensitiveStringMap options;
    private final StructType schema;

    Info(LogicalWriteInfo base, Map<String, String> options, StructType schema) {
      this.base = base;
      this.options = new CaseInsensitiveStringMap(options);
      this.schema = schema;
    }

    @Override
    public CaseInsensitiveStringMap options() {
      return options;
    }

    @Override
    public String queryId() {
      return base.queryId();
    }

    @Override
    public StructType schema() {
      return schema;
    }

    @Override
    public Optional<StructType> rowIdSchema() {
      return base.rowIdSchema();
    }

    @Override
    public Optional<StructType> metadataSchema() {
      return base.metadataSchema();
    }
  }
}
