package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.distributions.Distribution;
import org.apache.spark.sql.connector.distributions.Distributions;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NullOrdering;
import org.apache.spark.sql.connector.expressions.SortDirection;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.RequiresDistributionAndOrdering;

/**
 * How a write asks Spark to spread its rows over tasks before they reach lakecat's writer
 * (Spark's {@code RequiresDistributionAndOrdering}), from the table's distribution mode as the
 * bridge reads it ({@code lakecat.spark_ext.native.distribution}): {@code hash} clusters the
 * rows by the table's partition transforms, so that each partition is written by one task;
 * {@code range} orders them by the partition transforms and the table's sort order, so that
 * files do not overlap; {@code none} leaves them where they are. As Iceberg's {@code
 * SparkWriteUtil}; the transforms are evaluated by the catalog's functions ({@link
 * LakecatFunctions}), so {@code bucket} and {@code truncate} partitions cluster too.
 *
 * <p>Each task's rows are not sorted here: lakecat's writers sort them by the table's order.
 */
final class WriteRequirements {
  /** A write whose distribution and ordering are its {@link #requirements()}. */
  interface Spread extends RequiresDistributionAndOrdering {
    WriteRequirements requirements();

    @Override
    default Distribution requiredDistribution() {
      return requirements().distribution();
    }

    @Override
    default SortOrder[] requiredOrdering() {
      return requirements().ordering();
    }
  }

  /** Rows where they are. */
  static final WriteRequirements NONE = new WriteRequirements(Distributions.unspecified());

  private final Distribution distribution;

  private WriteRequirements(Distribution distribution) {
    this.distribution = distribution;
  }

  Distribution distribution() {
    return distribution;
  }

  SortOrder[] ordering() {
    return new SortOrder[0];
  }

  /**
   * The requirements of a write ({@code kind} {@code write}) or of the rows of a row-level
   * statement ({@code delete}, {@code update}, {@code merge}) into {@code table}; a table mode
   * that is not a mode is refused as a lakecat {@code ValidationError}, before anything runs.
   * {@code byFile}: a copy-on-write {@code DELETE} or {@code UPDATE}, whose rows of an
   * unpartitioned table cluster by the file they came from under {@code hash} (as Iceberg's).
   */
  static WriteRequirements of(DescribedTable table, String kind, boolean byFile) {
    return of(table, kind, byFile, new Expression[0]);
  }

  /**
   * The requirements of a merge-on-read statement's rows ({@code update}, {@code merge}): as
   * {@link #of(DescribedTable, String, boolean)}, by the row's file first ({@code _file}, null
   * for new rows), so that the deletes Spark hands over (whose row columns are null) spread
   * over the tasks by the file they delete from, and the new rows by partition (as Iceberg's
   * clustering by the deleted row's {@code _spec_id} and {@code _partition}, then the new row's
   * partition).
   */
  static WriteRequirements delta(DescribedTable table, String kind) {
    return of(table, kind, false, new Expression[] {Expressions.column(LakecatScan.FILE)});
  }

  private static WriteRequirements of(
      DescribedTable table, String kind, boolean byFile, Expression[] first) {
    JsonNode spec = table.descriptor.path("distribution");
    JsonNode mode = spec.path("modes").path(kind);
    if (mode.has("error")) {
      throw LakecatTable.refused(mode.get("error").asText());
    }
    Transform[] partitioning = table.partitioning;
    switch (mode.path("mode").asText("none")) {
      case "hash":
        if (partitioning.length > 0) {
          Expression[] keys = new Expression[first.length + partitioning.length];
          System.arraycopy(first, 0, keys, 0, first.length);
          System.arraycopy(partitioning, 0, keys, first.length, partitioning.length);
          return new WriteRequirements(Distributions.clustered(keys));
        }
        if (byFile) {
          Expression[] file = {Expressions.column(LakecatScan.FILE)};
          return new WriteRequirements(Distributions.clustered(file));
        }
        return NONE;
      case "range":
        List<SortOrder> order = new ArrayList<>();
        for (Expression e : first) {
          order.add(Expressions.sort(e, SortDirection.ASCENDING, NullOrdering.NULLS_FIRST));
        }
        for (Transform t : partitioning) {
          order.add(Expressions.sort(t, SortDirection.ASCENDING, NullOrdering.NULLS_FIRST));
        }
        for (JsonNode field : spec.path("sort_order")) {
          Transform t = SparkJson.transform(field.get("transform"));
          order.add(
              Expressions.sort(
                  t,
                  field.get("ascending").asBoolean()
                      ? SortDirection.ASCENDING
                      : SortDirection.DESCENDING,
                  field.get("nulls_first").asBoolean()
                      ? NullOrdering.NULLS_FIRST
                      : NullOrdering.NULLS_LAST));
        }
        if (order.size() == first.length) { // neither partitioned nor sorted
          return NONE;
        }
        return new WriteRequirements(Distributions.ordered(order.toArray(new SortOrder[0])));
      default:
        return NONE;
    }
  }
}
