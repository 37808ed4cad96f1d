package lakecat.spark;

import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.BinaryView;
import org.apache.spark.unsafe.types.CalendarInterval;
import org.apache.spark.unsafe.types.TimestampNanosVal;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A view of some rows of another column vector, nothing copied: row {@code i} of the view is
 * row {@code rows[i]} of the base. Struct fields are views of the base's children with the same
 * rows; arrays and maps are the base's own. The base stays its reader's: closing the view
 * closes nothing.
 */
final class RemappedColumnVector extends ColumnVector {
  private final ColumnVector base;
  private final int[] rows;
  private final int size;

  RemappedColumnVector(ColumnVector base, int[] rows, int size) {
    super(base.dataType());
    this.base = base;
    this.rows = rows;
    this.size = size;
  }

  @Override
  public void close() {}

  @Override
  public boolean hasNull() {
    return base.hasNull() && numNulls() > 0;
  }

  @Override
  public int numNulls() {
    if (!base.hasNull()) {
      return 0;
    }
    int nulls = 0;
    for (int i = 0; i < size; i++) {
      if (base.isNullAt(rows[i])) {
        nulls++;
      }
    }
    return nulls;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return base.isNullAt(rows[rowId]);
  }

  @Override
  public boolean getBoolean(int rowId) {
    return base.getBoolean(rows[rowId]);
  }

  @Override
  public byte getByte(int rowId) {
    return base.getByte(rows[rowId]);
  }

  @Override
  public short getShort(int rowId) {
    return base.getShort(rows[rowId]);
  }

  @Override
  public int getInt(int rowId) {
    return base.getInt(rows[rowId]);
  }

  @Override
  public long getLong(int rowId) {
    return base.getLong(rows[rowId]);
  }

  @Override
  public float getFloat(int rowId) {
    return base.getFloat(rows[rowId]);
  }

  @Override
  public double getDouble(int rowId) {
    return base.getDouble(rows[rowId]);
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    return base.getArray(rows[rowId]);
  }

  @Override
  public ColumnarMap getMap(int rowId) {
    return base.getMap(rows[rowId]);
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    return base.getDecimal(rows[rowId], precision, scale);
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    return base.getUTF8String(rows[rowId]);
  }

  @Override
  public byte[] getBinary(int rowId) {
    return base.getBinary(rows[rowId]);
  }

  @Override
  public BinaryView getBinaryView(int rowId) {
    return base.getBinaryView(rows[rowId]);
  }

  @Override
  public CalendarInterval getInterval(int rowId) {
    return base.getInterval(rows[rowId]);
  }

  @Override
  public TimestampNanosVal getTimestampNTZNanos(int rowId) {
    return base.getTimestampNTZNanos(rows[rowId]);
  }

  @Override
  public TimestampNanosVal getTimestampLTZNanos(int rowId) {
    return base.getTimestampLTZNanos(rows[rowId]);
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    return new RemappedColumnVector(base.getChild(ordinal), rows, size);
  }
}
