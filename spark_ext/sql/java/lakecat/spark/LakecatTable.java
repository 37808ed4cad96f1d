package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsDeleteV2;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.DataSource;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A lakecat table as the Python catalog described it, read and written through the Python
 * data source it names. Reads get the descriptor's read options (table, time travel) merged
 * under the query's options; writes get the write options (the table) added to the write
 * command's own, since Spark hands a Python writer only those.
 */
final class LakecatTable implements Table, SupportsRead, SupportsWrite, SupportsDeleteV2 {
  private final BridgeClient bridge;
  private final JsonNode descriptor;
  private final StructType schema;
  private final Transform[] partitioning;
  private final Map<String, String> properties;
  private Table delegate;

  LakecatTable(BridgeClient bridge, JsonNode descriptor) {
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
    if (!writable()) {
      return EnumSet.of(TableCapability.BATCH_READ);
    }
    return EnumSet.of(
        TableCapability.BATCH_READ,
        TableCapability.BATCH_WRITE,
        TableCapability.TRUNCATE,
        TableCapability.OVERWRITE_BY_FILTER,
        TableCapability.OVERWRITE_DYNAMIC);
  }

  private boolean writable() {
    return descriptor.path("write_options").isObject();
  }

  /** The Python data source's table, looked up when first used (in the session's thread). */
  private synchronized Table delegate() {
    if (delegate == null) {
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
      delegate = provider.getTable(schema, partitioning, properties);
    }
    return delegate;
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    Map<String, String> merged = new HashMap<>(Names.map(descriptor.get("read_options")));
    merged.putAll(options.asCaseSensitiveMap());
    return ((SupportsRead) delegate()).newScanBuilder(new CaseInsensitiveStringMap(merged));
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    if (!writable()) {
      throw new UnsupportedOperationException(name() + " is read-only");
    }
    return new LakecatWriteBuilder(
        this, (SupportsWrite) delegate(), info, Names.map(descriptor.get("write_options")));
  }

  /** A failure of the Python data source, as a lakecat error when it is one. */
  Exception translate(Exception failure) {
    return bridge.translate(failure);
  }

  Map<String, String> dynamicOverwriteOptions() {
    return Names.map(descriptor.get("dynamic_overwrite_options"));
  }

  /** {"convertible": bool, "options": {...}} for an overwrite by these predicates. */
  JsonNode overwriteFilter(Predicate[] predicates) {
    return bridge.call("overwrite_filter", predicateArgs(predicates));
  }

  // ---- DELETE FROM -----------------------------------------------------------------------
  @Override
  public boolean canDeleteWhere(Predicate[] predicates) {
    return writable() && bridge.call("can_delete", predicateArgs(predicates)).asBoolean();
  }

  @Override
  public void deleteWhere(Predicate[] predicates) {
    bridge.call("delete", predicateArgs(predicates));
  }

  private ObjectNode predicateArgs(Predicate[] predicates) {
    ObjectNode args = bridge.args();
    args.setAll((ObjectNode) descriptor.get("identifier"));
    args.set("predicates", SparkJson.expressions(predicates));
    return args;
  }
}
