package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.DataSource;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * A table as the Python catalog described it (its name, Spark schema, partition transforms,
 * properties and the Python data source that reads and writes it), for {@link LakecatTable}
 * and {@link LakecatStagedTable}.
 */
abstract class DescribedTable implements Table {
  final BridgeClient bridge;
  final JsonNode descriptor;
  final StructType schema;
  final Transform[] partitioning;
  final Map<String, String> properties;

  DescribedTable(BridgeClient bridge, JsonNode descriptor) {
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

  /**
   * A new instance of the Python data source (looked up in the session's thread). Spark's
   * Python data source keeps the Python-side source it creates first (its options and schema)
   * for the life of the instance, so every read and write takes a fresh one.
   */
  TableProvider provider() {
    String format = descriptor.get("format").asText();
    Bridges.shareDataSource(format); // in another session of the application
    return DataSource.lookupDataSourceV2(format, SQLConf.get())
        .getOrElse(
            () -> {
              throw new IllegalStateException(
                  "the Python data source '" + format + "' is not registered in this "
                      + "Spark session; attach the catalog with "
                      + "lakecat.spark_ext.attach_catalog(spark, ...)");
            });
  }

  /** The Python data source's table with this table's schema (a fresh one, see above). */
  Table delegate() {
    return provider().getTable(schema, partitioning, properties);
  }
}
