package lakecat.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.SparkStrategy;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions=lakecat.spark.LakecatSqlExtensions} (set by {@code lk.session}):
 * Iceberg's SQL statements that Spark's parser lacks ({@code ALTER TABLE ... CREATE/DROP
 * BRANCH/TAG}, {@code ADD/DROP PARTITION FIELD}) on lakecat catalogs, through {@link
 * LakecatSqlParser}; and copy-on-write row-level statements written with Spark's own Parquet
 * writer ({@link NativeRowLevelWrites}), as are dynamic partition overwrites ({@link
 * NativeDynamicOverwrites}); Iceberg's {@code mergeSchema} write option ({@link
 * MergeSchemaWrites}).
 */
public final class LakecatSqlExtensions
    extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectParser(
        new AbstractFunction2<SparkSession, ParserInterface, ParserInterface>() {
          @Override
          public ParserInterface apply(SparkSession session, ParserInterface parser) {
            return new LakecatSqlParser(session, parser);
          }
        });
    extensions.injectHintResolutionRule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new MergeSchemaWrites(session);
          }
        });
    extensions.injectPostHocResolutionRule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new NativeDynamicOverwrites(session);
          }
        });
    extensions.injectPlannerStrategy(
        new AbstractFunction1<SparkSession, SparkStrategy>() {
          @Override
          public SparkStrategy apply(SparkSession session) {
            return new NativeRowLevelWrites(session);
          }
        });
    return BoxedUnit.UNIT;
  }
}
