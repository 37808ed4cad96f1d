package lakecat.spark;

import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DayTimeIntervalType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.types.YearMonthIntervalType;
import org.apache.spark.sql.vectorized.ColumnVector;

/**
 * A batch's kept rows moved to its first rows inside the reader's own column vectors: row
 * {@code i} becomes what row {@code rows[i]} was, for {@code i < count} ({@code rows} rising).
 * Spark's Parquet reader fills {@link WritableColumnVector}s and resets them before its next
 * batch, so nothing is allocated and the batch keeps the reader's vector classes: the code Spark
 * generates for a scan, which calls the abstract {@link ColumnVector} (DataSource V2 scans),
 * then meets the classes it meets on reads without deletes.
 *
 * <p>What moves is what the vector stores per row: its null flag and its value, a dictionary id
 * when the vector holds dictionary ids, an offset and a length for strings, binaries, large
 * decimals, arrays and maps (their bytes and elements stay where they are), and the fields of
 * a struct, row for row. A {@link ConstantColumnVector} holds one value for every row and
 * needs nothing. A vector of another class or of a type not listed here is not moved ({@link
 * #movable}); the reader then gives views of the kept rows ({@link RemappedColumnVector}).
 */
final class KeptRows {
  private KeptRows() {}

  /** Whether {@link #move} can move the rows of {@code vector}, its fields' included. */
  static boolean movable(ColumnVector vector) {
    if (vector instanceof ConstantColumnVector) {
      return true;
    }
    if (!(vector instanceof WritableColumnVector)) {
      return false;
    }
    WritableColumnVector writable = (WritableColumnVector) vector;
    if (writable.isAllNull()) {
      return true;
    }
    DataType type = writable.dataType();
    if (type instanceof StructType) {
      for (int i = 0; i < writable.getNumChildren(); i++) {
        if (!movable(writable.getChild(i))) {
          return false;
        }
      }
      return true;
    }
    return storage(type) != Storage.NONE;
  }

  /** How a vector of {@code type} stores a row's value. */
  private enum Storage {
    BOOLEAN,
    BYTE,
    SHORT,
    INT,
    LONG,
    FLOAT,
    DOUBLE,
    OFFSETS, // an offset and a length into the vector's bytes or elements
    STRUCT,
    NONE
  }

  private static Storage storage(DataType type) {
    if (type instanceof BooleanType) {
      return Storage.BOOLEAN;
    } else if (type instanceof ByteType) {
      return Storage.BYTE;
    } else if (type instanceof ShortType) {
      return Storage.SHORT;
    } else if (type instanceof IntegerType
        || type instanceof DateType
        || type instanceof YearMonthIntervalType) {
      return Storage.INT;
    } else if (type instanceof LongType
        || type instanceof TimestampType
        || type instanceof TimestampNTZType
        || type instanceof DayTimeIntervalType) {
      return Storage.LONG;
    } else if (type instanceof FloatType) {
      return Storage.FLOAT;
    } else if (type instanceof DoubleType) {
      return Storage.DOUBLE;
    } else if (type instanceof DecimalType) {
      int precision = ((DecimalType) type).precision(); // as WritableColumnVector.putDecimal
      if (precision <= Decimal.MAX_INT_DIGITS()) {
        return Storage.INT;
      }
      return precision <= Decimal.MAX_LONG_DIGITS() ? Storage.LONG : Storage.OFFSETS;
    } else if (type instanceof StringType
        || type instanceof BinaryType
        || type instanceof ArrayType
        || type instanceof MapType) {
      return Storage.OFFSETS;
    } else if (type instanceof StructType) {
      return Storage.STRUCT;
    }
    return Storage.NONE;
  }

  /**
   * Moves the kept rows of a {@link #movable} vector to its first {@code count} rows. The rows
   * before the first dropped one are where they belong already.
   */
  static void move(ColumnVector vector, int[] rows, int count) {
    if (vector instanceof ConstantColumnVector) {
      return;
    }
    WritableColumnVector writable = (WritableColumnVector) vector;
    if (writable.isAllNull()) {
      return;
    }
    int start = 0;
    while (start < count && rows[start] == start) {
      start++;
    }
    if (start < count) {
      move(writable, rows, start, count);
    }
  }

  private static void move(WritableColumnVector vector, int[] rows, int start, int count) {
    if (vector.hasNull()) {
      for (int i = start; i < count; i++) {
        if (vector.isNullAt(rows[i])) {
          vector.putNull(i);
        } else {
          vector.putNotNull(i);
        }
      }
    }
    Storage storage = storage(vector.dataType());
    if (storage == Storage.STRUCT) {
      for (int c = 0; c < vector.getNumChildren(); c++) {
        WritableColumnVector child = vector.getChild(c);
        if (!(child.isAllNull())) {
          move(child, rows, start, count);
        }
      }
      return;
    }
    WritableColumnVector values = vector;
    if (vector.hasDictionary()) {
      values = vector.getDictionaryIds(); // the values are ids into the dictionary
      storage = Storage.INT;
    }
    switch (storage) {
      case BOOLEAN:
        for (int i = start; i < count; i++) {
          values.putBoolean(i, values.getBoolean(rows[i]));
        }
        break;
      case BYTE:
        for (int i = start; i < count; i++) {
          values.putByte(i, values.getByte(rows[i]));
        }
        break;
      case SHORT:
        for (int i = start; i < count; i++) {
          values.putShort(i, values.getShort(rows[i]));
        }
        break;
      case INT:
        for (int i = start; i < count; i++) {
          values.putInt(i, values.getInt(rows[i]));
        }
        break;
      case LONG:
        for (int i = start; i < count; i++) {
          values.putLong(i, values.getLong(rows[i]));
        }
        break;
      case FLOAT:
        for (int i = start; i < count; i++) {
          values.putFloat(i, values.getFloat(rows[i]));
        }
        break;
      case DOUBLE:
        for (int i = start; i < count; i++) {
          values.putDouble(i, values.getDouble(rows[i]));
        }
        break;
      case OFFSETS:
        for (int i = start; i < count; i++) {
          int from = rows[i];
          values.putArray(i, values.getArrayOffset(from), values.getArrayLength(from));
        }
        break;
      default:
        throw new IllegalStateException("not movable: " + vector.dataType());
    }
  }
}
