package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.View;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * Spark's views ({@link View}) to and from the bridge's JSON. The Python side keeps them as
 * Iceberg views: the query in Spark's dialect, the catalog and namespace it resolves names
 * against, the schema with the column comments, the query's own column names and the
 * properties. Spark's captured SQL settings are not kept, as in Iceberg's Spark runtime.
 */
final class LakecatViews {
  private LakecatViews() {}

  /** The arguments of create_view / replace_view / create_or_replace_view for {@code view}. */
  static ObjectNode arguments(BridgeClient bridge, Identifier ident, View view) {
    ObjectNode args = Names.put(bridge.args(), ident);
    args.put("sql", view.queryText());
    if (view.currentCatalog() != null) {
      args.put("current_catalog", view.currentCatalog());
    }
    args.set(
        "current_namespace",
        Names.array(view.currentNamespace() == null ? new String[0] : view.currentNamespace()));
    args.put("schema", view.schema().json());
    args.set(
        "query_column_names",
        Names.array(view.queryColumnNames() == null ? new String[0] : view.queryColumnNames()));
    args.set("properties", Names.object(view.properties()));
    if (view.schemaMode() != null) {
      args.put("schema_mode", view.schemaMode());
    }
    return args;
  }

  /** The Spark view of a bridge descriptor. */
  static View view(JsonNode descriptor) {
    View.Builder builder =
        new View.Builder()
            .withQueryText(descriptor.path("sql").asText())
            .withCurrentCatalog(descriptor.path("current_catalog").asText())
            .withCurrentNamespace(Names.strings(descriptor.path("current_namespace")))
            .withQueryColumnNames(Names.strings(descriptor.path("query_column_names")))
            .withSqlConfigs(new java.util.HashMap<>());
    JsonNode mode = descriptor.get("schema_mode");
    if (mode != null && !mode.isNull()) {
      builder = builder.withSchemaMode(mode.asText());
    }
    builder.withSchema((StructType) DataType.fromJson(descriptor.path("schema").asText()));
    builder.withProperties(Names.map(descriptor.path("properties")));
    return builder.build();
  }
}
