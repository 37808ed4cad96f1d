package lakecat.spark;

import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A row lineage column of one file's batch with its nulls assigned (spec, "Row Lineage"): where
 * the file stores a value, that value; else {@code base + index} (for {@code _row_id}: the
 * file's first row id plus the row's index in the file) or {@code base} alone (for {@code
 * _last_updated_sequence_number}: the file's data sequence number). Never null. Nothing is
 * copied; the vectors stay their reader's.
 */
final class LineageColumnVector extends ColumnVector {
  private final ColumnVector stored; // the file's values (null where it has none)
  private final ColumnVector index; // the rows' indexes in the file; null: add none
  private final long base;

  LineageColumnVector(ColumnVector stored, ColumnVector index, long base) {
    super(DataTypes.LongType);
    this.stored = stored;
    this.index = index;
    this.base = base;
  }

  @Override
  public long getLong(int rowId) {
    if (!stored.isNullAt(rowId)) {
      return stored.getLong(rowId);
    }
    return index == null ? base : base + index.getLong(rowId);
  }

  @Override
  public boolean isNullAt(int rowId) {
    return false;
  }

  @Override
  public boolean hasNull() {
    return false;
  }

  @Override
  public int numNulls() {
    return 0;
  }

  @Override
  public void close() {}

  private static UnsupportedOperationException notLong() {
    return new UnsupportedOperationException("a row lineage column holds longs only");
  }

  @Override
  public boolean getBoolean(int rowId) {
    throw notLong();
  }

  @Override
  public byte getByte(int rowId) {
    throw notLong();
  }

  @Override
  public short getShort(int rowId) {
    throw notLong();
  }

  @Override
  public int getInt(int rowId) {
    throw notLong();
  }

  @Override
  public float getFloat(int rowId) {
    throw notLong();
  }

  @Override
  public double getDouble(int rowId) {
    throw notLong();
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    throw notLong();
  }

  @Override
  public ColumnarMap getMap(int rowId) {
    throw notLong();
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    throw notLong();
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    throw notLong();
  }

  @Override
  public byte[] getBinary(int rowId) {
    throw notLong();
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    throw notLong();
  }
}
