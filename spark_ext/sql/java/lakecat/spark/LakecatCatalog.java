package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchViewException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.Relation;
import org.apache.spark.sql.connector.catalog.RelationCatalog;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.StagingTableCatalog;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.catalog.TableSummary;
import org.apache.spark.sql.connector.catalog.View;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A Spark catalog ({@code spark.sql.catalog.<name>=lakecat.spark.LakecatCatalog}) whose every
 * operation is answered by lakecat's Python catalog through the bridge attached under the same
 * name. Tables read and write through lakecat's Python data source. Procedures ({@code CALL
 * <catalog>.system.<name>(...)}) are described and run by the Python side too. {@code CREATE
 * TABLE AS SELECT}, {@code REPLACE TABLE} and {@code CREATE OR REPLACE TABLE} are staged ({@link
 * LakecatStagedTable}): the catalog changes only when the statement's rows are written. Iceberg's
 * partition transforms are its functions ({@code <catalog>.system.bucket(16, id)}, {@link
 * LakecatFunctions}), computed in the JVM. Views ({@code CREATE VIEW}, ...) are Iceberg views in
 * lakecat's catalog ({@link LakecatViews}); Spark runs their queries.
 */
public class LakecatCatalog
    implements StagingTableCatalog,
        SupportsNamespaces,
        ProcedureCatalog,
        FunctionCatalog,
        RelationCatalog {
  private String name;
  private BridgeClient bridge;

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
    this.bridge = new BridgeClient(name);
  }

  @Override
  public String name() {
    return name;
  }

  // ---- namespaces ------------------------------------------------------------------------
  @Override
  public String[][] listNamespaces() {
    return listNamespaces(new String[0]);
  }

  @Override
  public String[][] listNamespaces(String[] namespace) {
    JsonNode result = bridge.call("list_namespaces", namespaceArgs(namespace));
    String[][] out = new String[result.size()][];
    for (int i = 0; i < out.length; i++) {
      out[i] = Names.strings(result.get(i));
    }
    return out;
  }

  @Override
  public boolean namespaceExists(String[] namespace) {
    return bridge.call("namespace_exists", namespaceArgs(namespace)).asBoolean();
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(String[] namespace) {
    return Names.map(bridge.call("load_namespace", namespaceArgs(namespace)));
  }

  @Override
  public void createNamespace(String[] namespace, Map<String, String> metadata) {
    ObjectNode args = namespaceArgs(namespace);
    args.set("properties", Names.object(metadata));
    bridge.call("create_namespace", args);
  }

  @Override
  public void alterNamespace(String[] namespace, NamespaceChange... changes) {
    ObjectNode args = namespaceArgs(namespace);
    args.set("changes", SparkJson.namespaceChanges(changes));
    bridge.call("alter_namespace", args);
  }

  @Override
  public boolean dropNamespace(String[] namespace, boolean cascade) {
    ObjectNode args = namespaceArgs(namespace);
    args.put("cascade", cascade);
    return bridge.call("drop_namespace", args).asBoolean();
  }

  private ObjectNode namespaceArgs(String[] namespace) {
    ObjectNode args = bridge.args();
    args.set("namespace", Names.array(namespace));
    return args;
  }

  // ---- tables ----------------------------------------------------------------------------
  @Override
  public Identifier[] listTables(String[] namespace) {
    JsonNode result = bridge.call("list_tables", namespaceArgs(namespace));
    Identifier[] out = new Identifier[result.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = Names.identifier(Names.strings(result.get(i)));
    }
    return out;
  }

  /**
   * The tables of {@code SHOW TABLES} (with {@link #listViews} for the views) without loading
   * each one, as Spark's default would: the type is the one it derives from a lakecat table's
   * properties, which hold no {@code table_type}.
   */
  @Override
  public TableSummary[] listTableSummaries(String[] namespace) {
    Identifier[] tables = listTables(namespace);
    TableSummary[] out = new TableSummary[tables.length];
    for (int i = 0; i < out.length; i++) {
      out[i] = TableSummary.of(tables[i], TableSummary.FOREIGN_TABLE_TYPE);
    }
    return out;
  }

  @Override
  public Table loadTable(Identifier ident) {
    return table(bridge.call("load_table", loadArgs(ident)));
  }

  /** A table or a view, in one call: what Spark resolves a name in a query with. */
  @Override
  public Relation loadRelation(Identifier ident) {
    JsonNode found = bridge.call("load_relation", loadArgs(ident));
    JsonNode view = found.get("view");
    return view != null ? LakecatViews.view(view) : table(found.get("table"));
  }

  private ObjectNode loadArgs(Identifier ident) {
    ObjectNode args = Names.put(bridge.args(), ident);
    // write-audit-publish: a table with write.wap.enabled is read and written at this branch
    String wapBranch = LakecatTable.sessionConf(LakecatTable.WAP_BRANCH);
    if (wapBranch != null) {
      args.put("wap_branch", wapBranch);
    }
    return args;
  }

  @Override
  public Table loadTable(Identifier ident, String version) {
    ObjectNode args = Names.put(bridge.args(), ident);
    args.put("version", version);
    return table(bridge.call("load_table", args));
  }

  @Override
  public Table loadTable(Identifier ident, long timestamp) {
    ObjectNode args = Names.put(bridge.args(), ident);
    args.put("timestamp_us", timestamp);
    return table(bridge.call("load_table", args));
  }

  @Override
  @SuppressWarnings("deprecation") // the overloads taking columns / TableInfo end up here
  public Table createTable(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties) {
    ObjectNode args = Names.put(bridge.args(), ident);
    args.put("schema", schema.json());
    args.set("partitioning", SparkJson.transforms(partitions));
    args.set("properties", Names.object(properties));
    return table(bridge.call("create_table", args));
  }

  /**
   * CREATE TABLE ... LIKE: a lakecat source is copied as Iceberg's runtime copies a table (its
   * schema, partition spec, sort order, format version and properties); any other source by the
   * columns and partitioning Spark gives.
   */
  @Override
  public Table createTableLike(Identifier ident, TableInfo info, Table source)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    String sourceMetadata =
        source instanceof LakecatTable ? ((LakecatTable) source).metadataLocation() : null;
    if (sourceMetadata == null) {
      return createTable(ident, info);
    }
    ObjectNode args = Names.put(bridge.args(), ident);
    args.put("source_metadata_location", sourceMetadata);
    args.set("properties", Names.object(info.properties()));
    return table(bridge.call("create_table_like", args));
  }

  @Override
  @SuppressWarnings("deprecation") // the overloads taking columns / TableInfo end up here
  public StagedTable stageCreate(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties) {
    return stage(ident, schema, partitions, properties, "create");
  }

  @Override
  @SuppressWarnings("deprecation")
  public StagedTable stageReplace(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties) {
    return stage(ident, schema, partitions, properties, "replace");
  }

  @Override
  @SuppressWarnings("deprecation")
  public StagedTable stageCreateOrReplace(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties) {
    return stage(ident, schema, partitions, properties, "create_or_replace");
  }

  private StagedTable stage(
      Identifier ident,
      StructType schema,
      Transform[] partitions,
      Map<String, String> properties,
      String mode) {
    ObjectNode args = Names.put(bridge.args(), ident);
    args.put("schema", schema.json());
    args.set("partitioning", SparkJson.transforms(partitions));
    args.set("properties", Names.object(properties));
    args.put("mode", mode);
    return new LakecatStagedTable(bridge, bridge.call("stage_table", args));
  }

  @Override
  public Table alterTable(Identifier ident, TableChange... changes) {
    ObjectNode args = Names.put(bridge.args(), ident);
    args.set("changes", SparkJson.tableChanges(changes));
    return table(bridge.call("alter_table", args));
  }

  @Override
  public boolean dropTable(Identifier ident) {
    return bridge.call("drop_table", Names.put(bridge.args(), ident)).asBoolean();
  }

  @Override
  public boolean purgeTable(Identifier ident) {
    ObjectNode args = Names.put(bridge.args(), ident);
    args.put("purge", true);
    return bridge.call("drop_table", args).asBoolean();
  }

  @Override
  public void renameTable(Identifier from, Identifier to) {
    ObjectNode args = Names.put(bridge.args(), from);
    args.set("to_namespace", Names.array(to.namespace()));
    args.put("to_name", to.name());
    bridge.call("rename_table", args);
  }

  // ---- views ---------------------------------------------------------------------------
  @Override
  public Identifier[] listViews(String[] namespace) {
    JsonNode result = bridge.call("list_views", namespaceArgs(namespace));
    Identifier[] out = new Identifier[result.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = Names.identifier(Names.strings(result.get(i)));
    }
    return out;
  }

  @Override
  public View loadView(Identifier ident) throws NoSuchViewException {
    return LakecatViews.view(bridge.call("load_view", Names.put(bridge.args(), ident)));
  }

  @Override
  public boolean viewExists(Identifier ident) {
    return bridge.call("view_exists", Names.put(bridge.args(), ident)).asBoolean();
  }

  @Override
  public View createView(Identifier ident, View view) {
    return LakecatViews.view(
        bridge.call("create_view", LakecatViews.arguments(bridge, ident, view)));
  }

  @Override
  public View replaceView(Identifier ident, View view) throws NoSuchViewException {
    return LakecatViews.view(
        bridge.call("replace_view", LakecatViews.arguments(bridge, ident, view)));
  }

  @Override
  public View createOrReplaceView(Identifier ident, View view) {
    return LakecatViews.view(
        bridge.call("create_or_replace_view", LakecatViews.arguments(bridge, ident, view)));
  }

  @Override
  public boolean dropView(Identifier ident) {
    return bridge.call("drop_view", Names.put(bridge.args(), ident)).asBoolean();
  }

  @Override
  public void renameView(Identifier from, Identifier to) {
    ObjectNode args = Names.put(bridge.args(), from);
    args.set("to_namespace", Names.array(to.namespace()));
    args.put("to_name", to.name());
    bridge.call("rename_view", args);
  }

  // ---- procedures ------------------------------------------------------------------------
  @Override
  public UnboundProcedure loadProcedure(Identifier ident) {
    return new LakecatProcedure(bridge, bridge.call("load_procedure", Names.put(bridge.args(), ident)));
  }

  @Override
  public Identifier[] listProcedures(String[] namespace) {
    JsonNode result = bridge.call("list_procedures", namespaceArgs(namespace));
    Identifier[] out = new Identifier[result.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = Names.identifier(Names.strings(result.get(i)));
    }
    return out;
  }

  // ---- functions: Iceberg's partition transforms ------------------------------------------
  @Override
  public Identifier[] listFunctions(String[] namespace) {
    if (!LakecatFunctions.isFunctionNamespace(namespace)) {
      return new Identifier[0];
    }
    String[] names = LakecatFunctions.names();
    Identifier[] out = new Identifier[names.length];
    for (int i = 0; i < names.length; i++) {
      out[i] = Identifier.of(namespace, names[i]);
    }
    return out;
  }

  @Override
  public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
    UnboundFunction function =
        LakecatFunctions.isFunctionNamespace(ident.namespace())
            ? LakecatFunctions.load(ident.name())
            : null;
    if (function == null) {
      throw new NoSuchFunctionException(ident);
    }
    return function;
  }

  private Table table(JsonNode descriptor) {
    return new LakecatTable(bridge, descriptor);
  }
}
