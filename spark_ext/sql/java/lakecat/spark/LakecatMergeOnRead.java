package lakecat.spark;

import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.write.DeltaWrite;
import org.apache.spark.sql.connector.write.DeltaWriteBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.connector.write.SupportsDelta;

/**
 * An SQL {@code DELETE}, {@code UPDATE} or {@code MERGE INTO} on a table whose {@code
 * write.<command>.mode} is {@code merge-on-read}, as Spark's delta rewrite ({@code WriteDelta}):
 * Spark reads the files that may hold affected rows with their row ids ({@code _file}, {@code
 * _pos}) and hands the writers, per row, a delete (the id), an update (the id and the new row)
 * or an insert. {@link LakecatDeltaWrite} writes the new rows through the Python data source in
 * staging mode and collects the deleted positions; its commit writes one position delete file
 * per data file (format v3: a deletion vector) and commits them with the new rows as one
 * lakecat commit, the files read kept as read files for the conflict checks.
 */
final class LakecatMergeOnRead extends LakecatRowLevelOperation implements SupportsDelta {
  LakecatMergeOnRead(LakecatTable table, RowLevelOperationInfo info) {
    super(table, info);
  }

  @Override
  public String description() {
    return "lakecat merge-on-read " + command;
  }

  @Override
  boolean delta() {
    return true;
  }

  @Override
  public DeltaWriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return new DeltaWriteBuilder() {
      @Override
      public DeltaWrite build() {
        return table.deltaWrite(info, command, scan());
      }
    };
  }

  @Override
  public NamedReference[] rowId() {
    return new NamedReference[] {
      Expressions.column(LakecatScan.FILE), Expressions.column(LakecatScan.POS),
    };
  }

  @Override
  public NamedReference[] requiredMetadataAttributes() {
    if (table.rowLineage()) {
      return new NamedReference[] {
        Expressions.column(LakecatTable.ROW_ID), Expressions.column(LakecatTable.LAST_UPDATED),
      };
    }
    return new NamedReference[0];
  }

  /** An update reaches the writer as a delete of the old row and a reinsert of the new one. */
  @Override
  public boolean representUpdateAsDeleteAndInsert() {
    return true;
  }
}
