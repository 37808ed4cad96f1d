package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.DataSource;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The table of a {@code CREATE TABLE AS SELECT}, {@code REPLACE TABLE [AS SELECT]} or {@code
 * CREATE OR REPLACE TABLE} before it exists in the catalog (Spark's {@link StagedTable}): Spark
 * writes the statement's rows into it through the Python data source, which stages the files
 * against the new definition, then commits it (one lakecat commit: the new definition and rows
 * replace the old ones, or the table is created) or aborts it (the staged files are deleted and
 * the catalog never changed). See {@code spark_ext/sql/staging.py}.
 */
final class LakecatStagedTable implements StagedTable, SupportsWrite {
  private final BridgeClient bridge;
  private final JsonNode descriptor;
  private final StructType schema;
  private final Transform[] partitioning;
  private final Map<String, String> properties;

  LakecatStagedTable(BridgeClient bridge, JsonNode descriptor) {
    this.bridge = bridge;
    this.descriptor = descriptor;
    this.schema = (StructType) DataType.fromJson(descriptor.get("schema").asText());
    this.partitioning = SparkJson.transforms(descriptor.get("partitioning"));
    this.properties = Names.map(descriptor.get("properties"));
  }

  @Override
  public String name() {
    return descriptor.get("name").asText();
  }

  @Override
  @SuppressWarnings("deprecation") // Spark derives columns() from it
  public StructType schema() {
    return schema;
  }

  @Override
  public Transform[] partitioning() {
    return partitioning;
  }

  @Override
  public Map<String, String> properties() {
    return properties;
  }

  @Override
  public Set<TableCapability> capabilities() {
    // Spark writes a replace's rows as an overwrite of everything (truncate): the staged table
    // holds nothing but them anyway, so the write stays a staged append.
    return EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.TRUNCATE);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    String format = descriptor.get("format").asText();
    TableProvider provider =
        DataSource.lookupDataSourceV2(format, SQLConf.get())
            .getOrElse(
                () -> {
                  throw new IllegalStateException(
                      "the Python data source '" + format + "' is not registered in this "
                          + "Spark session; attach the catalog with "
                          + "lakecat.spark_ext.attach_catalog(spark, ...)");
                });
    SupportsWrite delegate = (SupportsWrite) provider.getTable(schema, partitioning, properties);
    Map<String, String> options = new HashMap<>(info.options().asCaseSensitiveMap());
    options.putAll(Names.map(descriptor.get("write_options")));
    WriteBuilder builder = delegate.newWriteBuilder(new Info(info, options));
    return new SupportsTruncate() {
      @Override
      public WriteBuilder truncate() {
        return this;
      }

      @Override
      public Write build() {
        return new LakecatWrite(bridge, builder.build());
      }
    };
  }

  @Override
  public void commitStagedChanges() {
    bridge.call("commit_staged", stageArgs());
  }

  @Override
  public void abortStagedChanges() {
    bridge.call("abort_staged", stageArgs());
  }

  private ObjectNode stageArgs() {
    ObjectNode args = bridge.args();
    args.put("stage_id", descriptor.get("stage_id").asText());
    return args;
  }

  /** The write command's info with the staged table's write options. */
  private static final class Info implements LogicalWriteInfo {
    private final LogicalWriteInfo base;
    private final CaseInsensitiveStringMap options;

    Info(LogicalWriteInfo base, Map<String, String> options) {
      this.base = base;
      this.options = new CaseInsensitiveStringMap(options);
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
      return base.schema();
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
