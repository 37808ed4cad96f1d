package lakecat.spark;

import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;

/**
 * An SQL {@code DELETE}, {@code UPDATE} or {@code MERGE INTO} as a copy-on-write rewrite
 * (Spark's group-based {@code ReplaceData}): Spark reads the files that may hold affected rows
 * through {@link LakecatScan.RowLevel} (the table as the statement loaded it, narrowed at run
 * time to the files with matching rows), computes every row of those files as it must be
 * after the statement, and writes them through the Python data source in staging mode. The
 * write's commit then replaces exactly the files read with the files written, as one lakecat
 * commit with the statement's conflict checks (the table's isolation level for the command,
 * the pushed filter as the read filter).
 */
final class LakecatCopyOnWrite extends LakecatRowLevelOperation {
  LakecatCopyOnWrite(LakecatTable table, RowLevelOperationInfo info) {
    super(table, info);
  }

  @Override
  public String description() {
    return "lakecat copy-on-write " + command;
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return new WriteBuilder() {
      @Override
      public Write build() {
        return table.rowLevelWrite(info, command, scan());
      }
    };
  }

  @Override
  public NamedReference[] requiredMetadataAttributes() {
    if (table.rowLineage()) {
      return new NamedReference[] {
        Expressions.column(LakecatScan.FILE),
        Expressions.column(LakecatTable.ROW_ID),
        Expressions.column(LakecatTable.LAST_UPDATED),
      };
    }
    return new NamedReference[] {Expressions.column(LakecatScan.FILE)};
  }
}
