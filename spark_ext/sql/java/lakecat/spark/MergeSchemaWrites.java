package lakecat.spark;

import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.NamedRelation;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import scala.collection.immutable.Map;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Iceberg's {@code mergeSchema} write option ({@code merge-schema} too) on lakecat tables: a
 * DataFrame append or overwrite ({@code df.writeTo(t).option("mergeSchema", "true").append()},
 * {@code .overwrite(...)}, {@code .overwritePartitions()}, and {@code df.write.option(...)
 * .mode("append").saveAsTable(t)}) becomes Spark's own write with schema evolution, as {@code
 * INSERT WITH SCHEMA EVOLUTION} is: the columns (and nested struct fields) of the DataFrame that
 * the table lacks are added first, in one schema commit that Spark asks the catalog for, then
 * the rows are written by name, with nulls for the table's columns the DataFrame lacks. Iceberg
 * also needs the table property {@code write.spark.accept-any-schema=true}; lakecat takes the
 * option alone, since it asks for the change explicitly.
 *
 * <p>The rule runs with the hint rules ({@code injectHintResolutionRule}), before Spark's
 * resolution batch: there Spark resolves the target table and its output columns in one pass,
 * and would refuse the DataFrame's extra columns before a later rule could ask for the
 * evolution. Writes to other catalogs' tables are left as they are.
 */
final class MergeSchemaWrites extends Rule<LogicalPlan> {
  private static final List<String> OPTIONS = List.of("mergeSchema", "merge-schema");

  private final SparkSession session;

  MergeSchemaWrites(SparkSession session) {
    this.session = session;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (plan instanceof AppendData) {
      AppendData write = (AppendData) plan;
      if (asks(write.withSchemaEvolution(), write.writeOptions(), write.table())) {
        return write.copy(
            write.table(),
            write.query(),
            write.writeOptions(),
            write.isByName(),
            true,
            write.write(),
            write.analyzedQuery());
      }
    } else if (plan instanceof OverwriteByExpression) {
      OverwriteByExpression write = (OverwriteByExpression) plan;
      if (asks(write.withSchemaEvolution(), write.writeOptions(), write.table())) {
        return write.copy(
            write.table(),
            write.deleteExpr(),
            write.query(),
            write.writeOptions(),
            write.isByName(),
            true,
            write.write(),
            write.analyzedQuery());
      }
    } else if (plan instanceof OverwritePartitionsDynamic) {
      OverwritePartitionsDynamic write = (OverwritePartitionsDynamic) plan;
      if (asks(write.withSchemaEvolution(), write.writeOptions(), write.table())) {
        return write.copy(
            write.table(),
            write.query(),
            write.writeOptions(),
            write.isByName(),
            true,
            write.write());
      }
    }
    return plan;
  }

  private boolean asks(boolean evolving, Map<String, String> options, NamedRelation table) {
    return !evolving && mergeSchema(options) && lakecatTable(table);
  }

  /** The option's value, as Iceberg reads it: {@code true} in any case. */
  private static boolean mergeSchema(Map<String, String> options) {
    for (java.util.Map.Entry<String, String> option :
        CollectionConverters.asJava(options).entrySet()) {
      if (OPTIONS.stream().anyMatch(option.getKey()::equalsIgnoreCase)) {
        return "true".equalsIgnoreCase(option.getValue().trim());
      }
    }
    return false;
  }

  /** Whether the write's target is a lakecat catalog's table, resolved or by its name. */
  private boolean lakecatTable(NamedRelation table) {
    if (table instanceof DataSourceV2Relation) {
      return ((DataSourceV2Relation) table).table() instanceof LakecatTable;
    }
    if (!(table instanceof UnresolvedRelation)) {
      return false;
    }
    List<String> parts =
        CollectionConverters.asJava(((UnresolvedRelation) table).multipartIdentifier());
    org.apache.spark.sql.classic.SparkSession classic =
        (org.apache.spark.sql.classic.SparkSession) session;
    if (parts.size() == 1 && classic.sessionState().catalog().getTempView(parts.get(0)).isDefined()) {
      return false; // a temporary view's name comes first, as Spark resolves it
    }
    CatalogManager catalogs = classic.sessionState().catalogManager();
    CatalogPlugin catalog =
        parts.size() > 1 && catalogs.isCatalogRegistered(parts.get(0))
            ? catalogs.catalog(parts.get(0))
            : catalogs.currentCatalog();
    return catalog instanceof LakecatCatalog;
  }
}
