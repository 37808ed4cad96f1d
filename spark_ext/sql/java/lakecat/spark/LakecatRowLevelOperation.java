package lakecat.spark;

import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * What a lakecat row-level operation ({@link LakecatCopyOnWrite}, {@link LakecatMergeOnRead})
 * shares: the command, one scan builder for Spark's read of the candidate files, and the scan
 * it built, whose files the write's commit names.
 *
 * <p>Spark may never build that scan: its optimizer replaces the read with an empty relation
 * when it proves the statement's condition cannot hold (constraint propagation, e.g. {@code
 * part = 1 AND part != 1 AND score IS NULL}). The statement then depends on none of the
 * table's rows, and its write reads nothing ({@link #scan} is null), as Iceberg's.
 */
abstract class LakecatRowLevelOperation implements RowLevelOperation {
  final LakecatTable table;
  final Command command;
  private ScanBuilder scanBuilder;
  private LakecatScan.RowLevel scan;

  LakecatRowLevelOperation(LakecatTable table, RowLevelOperationInfo info) {
    this.table = table;
    this.command = info.command();
  }

  @Override
  public Command command() {
    return command;
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    if (scanBuilder == null) {
      scanBuilder =
          new LakecatScanBuilder(
              table,
              table.readOptions(options),
              built -> {
                if (delta()) {
                  built.readForDelta();
                }
                scan = built;
              });
    }
    return scanBuilder;
  }

  /** Whether this is a merge-on-read (delta) operation. */
  boolean delta() {
    return false;
  }

  /**
   * The scan Spark planned for this operation (its write is built after it); null when Spark
   * optimized the read away (the class comment).
   */
  LakecatScan.RowLevel scan() {
    return scan;
  }
}
