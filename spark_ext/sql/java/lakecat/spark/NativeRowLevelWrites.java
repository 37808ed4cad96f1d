package lakecat.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.ProjectingInternalRow;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.DynamicPruningExpression;
import org.apache.spark.sql.catalyst.expressions.DynamicPruningSubquery;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.InSubquery;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.MergeRows;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.ReplaceData;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;
import org.apache.spark.sql.execution.datasources.v2.AppendDataExecV1;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import scala.collection.Iterator;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction0;
import scala.runtime.BoxedUnit;

/**
 * A planner strategy ({@link LakecatSqlExtensions}) that writes the rows of a copy-on-write
 * {@code UPDATE}, {@code MERGE INTO} or {@code DELETE} with Spark's own Parquet writer.
 *
 * <p>Spark plans such a statement as {@code ReplaceData}, whose physical write hands every row
 * to the table's {@code BatchWrite}: for lakecat, the Python data source's writer. This strategy
 * plans a {@code ReplaceData} whose write is lakecat's ({@link LakecatRowLevelWrite}) instead as
 * Spark's V1 write fallback ({@code AppendDataExecV1}) over the statement's new rows (the query
 * projected to the table's columns, as {@code ReplaceData}'s row projection does): the rows reach
 * the bridge as a DataFrame, which it writes as {@code lk.write} does, staged, and the staged
 * files are committed in place of the files the scan read, as before. The scan, and with it
 * Spark's runtime filter that narrows the files read, are the statement's own.
 *
 * <p>On tables with row lineage (format v3) the rows carry their {@code _row_id} and {@code
 * _last_updated_sequence_number} after the table's columns, and the native write writes them
 * too, so that copied rows keep both and updated rows keep their id. Without the extension, or with the session setting {@code
 * spark.lakecat.nativeRowLevelWrites=false}, every row-level write goes through the Python
 * writer.
 */
final class NativeRowLevelWrites extends SparkStrategy {
  private final org.apache.spark.sql.classic.SparkSession session;

  NativeRowLevelWrites(SparkSession session) {
    this.session = (org.apache.spark.sql.classic.SparkSession) session;
  }

  /**
   * After the commit, what Spark's own {@code refreshCache} does for a row-level write: the
   * cached queries of the table are cached again from the table as the catalog now loads it (by
   * name; recaching by the plan would read the version the statement started from again).
   */
  private void refreshCache(LogicalPlan original) {
    if (original instanceof DataSourceV2Relation) {
      DataSourceV2Relation relation = (DataSourceV2Relation) original;
      if (relation.catalog().isDefined() && relation.identifier().isDefined()) {
        Identifier ident = relation.identifier().get();
        List<String> parts = new ArrayList<>();
        parts.add(relation.catalog().get().name());
        parts.addAll(Arrays.asList(ident.namespace()));
        parts.add(ident.name());
        session
            .sharedState()
            .cacheManager()
            .recacheTableOrView(session, CollectionConverters.asScala(parts).toSeq(), false);
        return;
      }
    }
    session.sharedState().cacheManager().recacheByPlan(session, original);
  }

  @Override
  public Seq<SparkPlan> apply(LogicalPlan plan) {
    if (!(plan instanceof ReplaceData)) {
      return empty();
    }
    ReplaceData replace = (ReplaceData) plan;
    if (replace.write().isEmpty() || !(replace.write().get() instanceof LakecatRowLevelWrite)) {
      return empty();
    }
    LakecatRowLevelWrite write = (LakecatRowLevelWrite) replace.write().get();
    if (!enabled(session)) {
      return empty();
    }
    List<LogicalPlan> groupFilters = new ArrayList<>();
    LogicalPlan query = withoutGroupFilters(replace.query(), write.scan(), groupFilters);
    LogicalPlan rows = rowsOf(replace, query, write.table().rowLineage());
    LogicalPlan original = (LogicalPlan) replace.originalTable();
    AbstractFunction0<BoxedUnit> refreshCache =
        new AbstractFunction0<BoxedUnit>() {
          @Override
          public BoxedUnit apply() {
            refreshCache(original);
            return BoxedUnit.UNIT;
          }
        };
    SparkPlan exec =
        new AppendDataExecV1(
            write.table(),
            rows,
            refreshCache,
            write.nativeWrite(session, groupFilters, mergeWithoutInserts(replace.query())));
    List<SparkPlan> out = new ArrayList<>();
    out.add(exec);
    return CollectionConverters.asScala(out).toList();
  }

  /**
   * {@code plan} without the filters Spark's runtime group filtering put on {@code scan}'s
   * relation ({@code _file IN (subquery)}), whose subqueries are added to {@code subqueries}.
   * Such a filter may stand alone (UPDATE, MERGE) or be one conjunct of the filter right on the
   * relation (DELETE, whose {@code NOT (condition <=> true)} Spark's optimizer combines with
   * it); the other conjuncts stay.
   */
  private static LogicalPlan withoutGroupFilters(
      LogicalPlan plan, LakecatScan.RowLevel scan, List<LogicalPlan> subqueries) {
    if (plan instanceof Filter && onScan((Filter) plan, scan)) {
      return keepConjuncts(
          (Filter) plan,
          conjunct -> {
            LogicalPlan subquery = groupFilterQuery(conjunct);
            if (subquery == null) {
              return true;
            }
            subqueries.add(withoutDynamicPruning(subquery));
            return false;
          });
    }
    return mapChildren(plan, child -> withoutGroupFilters(child, scan, subqueries));
  }

  /**
   * {@code plan} without the dynamic partition pruning filters Spark's optimizer put in it
   * ({@code DynamicPruningSubquery}, which only its physical planning of the whole statement
   * turns into something that runs): the group filter's query runs as a Dataset of its own,
   * whose analysis refuses them (seen on a MERGE joining on a bucketed column). They only skip
   * partitions, so the query's answer is the same without them.
   */
  private static LogicalPlan withoutDynamicPruning(LogicalPlan plan) {
    LogicalPlan out = mapChildren(plan, NativeRowLevelWrites::withoutDynamicPruning);
    if (!(out instanceof Filter)) {
      return out;
    }
    return keepConjuncts((Filter) out, conjunct -> !(conjunct instanceof DynamicPruningSubquery));
  }

  /** {@code plan} with {@code change} applied to each child (itself when none changes). */
  private static LogicalPlan mapChildren(
      LogicalPlan plan, UnaryOperator<LogicalPlan> change) {
    List<LogicalPlan> children = new ArrayList<>();
    boolean changed = false;
    Iterator<LogicalPlan> it = plan.children().iterator();
    while (it.hasNext()) {
      LogicalPlan child = it.next();
      LogicalPlan changedChild = change.apply(child);
      changed |= changedChild != child;
      children.add(changedChild);
    }
    return changed ? plan.withNewChildren(CollectionConverters.asScala(children).toList()) : plan;
  }

  /**
   * {@code filter} with only the conjuncts of its condition that {@code keep} keeps: itself when
   * it keeps them all, its child when none.
   */
  private static LogicalPlan keepConjuncts(
      Filter filter, Predicate<Expression> keep) {
    Expression kept = null;
    boolean dropped = false;
    for (Expression conjunct : conjuncts(filter.condition())) {
      if (keep.test(conjunct)) {
        kept = kept == null ? conjunct : new And(kept, conjunct);
      } else {
        dropped = true;
      }
    }
    if (!dropped) {
      return filter;
    }
    return kept == null ? filter.child() : new Filter(kept, filter.child());
  }

  /** Whether {@code filter} is right on the relation that reads through {@code scan}. */
  private static boolean onScan(Filter filter, LakecatScan.RowLevel scan) {
    return scan != null
        && filter.child() instanceof DataSourceV2ScanRelation
        && ((DataSourceV2ScanRelation) filter.child()).scan() == scan;
  }

  /** {@code condition}'s conjuncts, left to right. */
  private static List<Expression> conjuncts(Expression condition) {
    List<Expression> out = new ArrayList<>();
    if (condition instanceof And) {
      out.addAll(conjuncts(((And) condition).left()));
      out.addAll(conjuncts(((And) condition).right()));
    } else {
      out.add(condition);
    }
    return out;
  }

  /**
   * Whether {@code plan} is a {@code MERGE}'s without a {@code WHEN NOT MATCHED} clause: its
   * {@code MergeRows} has no instruction for source rows without a match, so every row it
   * writes comes from a row of the table's scan. False when there is no {@code MergeRows}.
   */
  private static boolean mergeWithoutInserts(LogicalPlan plan) {
    if (plan instanceof MergeRows) {
      return ((MergeRows) plan).notMatchedInstructions().isEmpty();
    }
    Iterator<LogicalPlan> children = plan.children().iterator();
    while (children.hasNext()) {
      if (mergeWithoutInserts(children.next())) {
        return true;
      }
    }
    return false;
  }

  /** The subquery of a runtime filter {@code _file IN (subquery)}; or null. */
  private static LogicalPlan groupFilterQuery(Expression condition) {
    if (!(condition instanceof DynamicPruningExpression)) {
      return null;
    }
    Expression pruning = ((DynamicPruningExpression) condition).child();
    if (!(pruning instanceof InSubquery)) {
      return null;
    }
    InSubquery in = (InSubquery) pruning;
    if (in.values().size() != 1
        || !(in.values().apply(0) instanceof Attribute)
        || !LakecatScan.FILE.equals(((Attribute) in.values().apply(0)).name())) {
      return null;
    }
    return in.query().plan();
  }

  /** {@value #ENABLED}: true (the default) or false (the Python data source writes). */
  static final String ENABLED = "spark.lakecat.nativeRowLevelWrites";

  /** Whether {@code session} lets Spark's Parquet writer write row-level statements' rows. */
  static boolean enabled(org.apache.spark.sql.SparkSession session) {
    return !"false".equalsIgnoreCase(session.conf().get(ENABLED, "true").trim());
  }

  /**
   * The statement's query reduced to the new rows' columns (ReplaceData's row projection); with
   * row lineage, then {@code _row_id} and {@code _last_updated_sequence_number} from its
   * metadata projection (Spark nulls an updated row's sequence number, which is not preserved on
   * update: the commit's applies).
   */
  private static LogicalPlan rowsOf(ReplaceData replace, LogicalPlan query, boolean lineage) {
    ProjectingInternalRow projection = replace.projections().rowProjection();
    Seq<Attribute> output = query.output();
    List<NamedExpression> columns = new ArrayList<>();
    Iterator<Object> ordinals = projection.colOrdinals().iterator();
    while (ordinals.hasNext()) {
      columns.add(output.apply((Integer) ordinals.next()));
    }
    if (lineage) {
      if (replace.projections().metadataProjection().isEmpty()) {
        throw new IllegalStateException("lakecat: Spark passed no row lineage to the rewrite");
      }
      ProjectingInternalRow metadata = replace.projections().metadataProjection().get();
      for (String column : new String[] {LakecatTable.ROW_ID, LakecatTable.LAST_UPDATED}) {
        int index = metadata.schema().fieldIndex(column);
        columns.add(output.apply((Integer) metadata.colOrdinals().apply(index)));
      }
    }
    return new Project(CollectionConverters.asScala(columns).toList(), query);
  }

  private static Seq<SparkPlan> empty() {
    return CollectionConverters.asScala(new ArrayList<SparkPlan>()).toList();
  }
}
