package lakecat.spark;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.Arrays;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * {@code zorder(c1, c2, ...)}: the Z-order value of a row's columns, the key a {@code
 * rewrite_data_files} with {@code sort_order => 'zorder(c1, c2)'} sorts each file group by, so
 * that rows close in every column end up in the same files. It computes what Iceberg's Spark
 * runtime computes ({@code SparkZOrderUDF}, {@code ZOrderByteUtils}): each column's value as
 * bytes that order as the value does (whole numbers, dates and timestamps as 8 big-endian bytes
 * with the sign bit flipped; floating point numbers as their IEEE bits, the sign bit flipped for
 * positive numbers and every bit for negative ones; a boolean as one byte, {@code 0x81} for
 * true, padded to 8; strings as their first 8 UTF-8 bytes and binary as its first 8 bytes,
 * zero-padded; a null as zeros), then the bits of all columns interleaved, most significant
 * first, a column that has run out of bytes skipped. Two differences from Iceberg: a date
 * contributes its day number and a timestamp its microseconds (Iceberg's Spark casts them to a
 * long, which is null for a date and whole seconds for a timestamp).
 *
 * <p>{@code zorder_bytes(var_length_contribution, max_output_size, column, ...)} is the same
 * with Iceberg's two options of a Z-order rewrite: how many bytes of a string or binary value
 * count (default 8), and at most how many bytes of the interleaved value are kept (default:
 * all). Both are positive ints, the same for every row.
 */
final class ZOrder implements UnboundFunction {
  static final String NAME = "zorder";
  static final String SIZED = "zorder_bytes";
  private static final int PRIMITIVE = 8; // ZOrderByteUtils.PRIMITIVE_BUFFER_SIZE
  private static final int VARIABLE = 8; // Iceberg's default var-length-contribution

  private final boolean sized; // zorder_bytes: two leading size arguments

  ZOrder(boolean sized) {
    this.sized = sized;
  }

  @Override
  public String name() {
    return sized ? SIZED : NAME;
  }

  @Override
  public String description() {
    return sized
        ? SIZED
            + "(var_length_contribution, max_output_size, column, ...): the Z-order value "
            + "(binary) of the columns with Iceberg's two size options"
        : NAME
            + "(column, ...): the Z-order value (binary) of the columns, as Iceberg's sort "
            + "strategy zorder(...) computes it";
  }

  @Override
  public BoundFunction bind(StructType inputType) {
    int first = sized ? 2 : 0;
    if (inputType.size() <= first) {
      throw new UnsupportedOperationException(
          name() + " takes " + (sized ? "two sizes and " : "") + "at least one column");
    }
    for (int i = 0; i < first; i++) {
      if (!(inputType.fields()[i].dataType() instanceof IntegerType)) {
        throw new UnsupportedOperationException(
            SIZED
                + " takes var_length_contribution and max_output_size as int values first, "
                + "not "
                + inputType.fields()[i].dataType().catalogString());
      }
    }
    Encoder[] encoders = new Encoder[inputType.size() - first];
    for (int i = 0; i < encoders.length; i++) {
      StructField field = inputType.fields()[first + i];
      encoders[i] = encoder(field.dataType(), first + i);
      if (encoders[i] == null) {
        throw new UnsupportedOperationException(
            name()
                + " does not take a "
                + field.dataType().catalogString()
                + " column ("
                + field.name()
                + "): it orders boolean, integer, floating point, date, timestamp, string "
                + "and binary columns");
      }
    }
    return new Bound(inputType, encoders, sized);
  }

  /**
   * A column's value as bytes that order as the value does (zeros for a null); a string or
   * binary value as its first {@code variable} bytes.
   */
  private interface Encoder extends Serializable {
    byte[] encode(InternalRow row, int variable);
  }

  private static byte[] whole(long value) {
    return ByteBuffer.allocate(PRIMITIVE).putLong(value ^ 0x8000000000000000L).array();
  }

  private static byte[] floating(double value) {
    long bits = Double.doubleToLongBits(value);
    bits ^= (bits >> (Long.SIZE - 1)) | Long.MIN_VALUE;
    return ByteBuffer.allocate(PRIMITIVE).putLong(bits).array();
  }

  private static byte[] prefix(byte[] value, int variable) {
    return Arrays.copyOf(value, variable); // truncated, or zero-padded
  }

  private static Encoder encoder(DataType type, int i) {
    if (type instanceof ByteType) {
      return (row, v) -> row.isNullAt(i) ? new byte[PRIMITIVE] : whole(row.getByte(i));
    }
    if (type instanceof ShortType) {
      return (row, v) -> row.isNullAt(i) ? new byte[PRIMITIVE] : whole(row.getShort(i));
    }
    if (type instanceof IntegerType || type instanceof DateType) {
      return (row, v) -> row.isNullAt(i) ? new byte[PRIMITIVE] : whole(row.getInt(i));
    }
    if (type instanceof LongType
        || type instanceof TimestampType
        || type instanceof TimestampNTZType) {
      return (row, v) -> row.isNullAt(i) ? new byte[PRIMITIVE] : whole(row.getLong(i));
    }
    if (type instanceof FloatType) {
      return (row, v) -> row.isNullAt(i) ? new byte[PRIMITIVE] : floating(row.getFloat(i));
    }
    if (type instanceof DoubleType) {
      return (row, v) -> row.isNullAt(i) ? new byte[PRIMITIVE] : floating(row.getDouble(i));
    }
    if (type instanceof NullType) { // a NULL literal
      return (row, v) -> new byte[PRIMITIVE];
    }
    if (type instanceof BooleanType) {
      return (row, v) -> {
        byte[] out = new byte[PRIMITIVE];
        out[0] = !row.isNullAt(i) && row.getBoolean(i) ? (byte) -127 : 0;
        return out;
      };
    }
    if (type instanceof StringType) {
      return (row, v) -> row.isNullAt(i) ? new byte[v] : prefix(row.getUTF8String(i).getBytes(), v);
    }
    if (type instanceof BinaryType) {
      return (row, v) -> row.isNullAt(i) ? new byte[v] : prefix(row.getBinary(i), v);
    }
    return null;
  }

  /**
   * The bits of {@code columns} interleaved, most significant first: bit 7 of byte 0 of each
   * column in turn, then bit 6, ...; a column with fewer bytes than the others is skipped once
   * it has none left, up to {@code maxSize} bytes ({@code ZOrderByteUtils.interleaveBits}).
   */
  static byte[] interleave(byte[][] columns, int maxSize) {
    long total = 0;
    for (byte[] column : columns) {
      total += column.length;
    }
    int size = (int) Math.min(total, maxSize);
    byte[] out = new byte[size];
    int column = 0;
    int sourceByte = 0;
    int sourceBit = 7;
    int outByte = 0;
    int outBit = 7;
    while (outByte < size) {
      int bit = (columns[column][sourceByte] >>> sourceBit) & 1;
      out[outByte] |= (byte) (bit << outBit);
      if (--outBit < 0) {
        outByte++;
        outBit = 7;
      }
      if (outByte == size) {
        break;
      }
      do {
        if (++column == columns.length) {
          column = 0;
          if (--sourceBit < 0) {
            sourceByte++;
            sourceBit = 7;
          }
        }
      } while (columns[column].length <= sourceByte);
    }
    return out;
  }

  private static final class Bound implements ScalarFunction<byte[]> {
    private final StructType inputType;
    private final Encoder[] encoders;
    private final boolean sized;

    Bound(StructType inputType, Encoder[] encoders, boolean sized) {
      this.inputType = inputType;
      this.encoders = encoders;
      this.sized = sized;
    }

    @Override
    public DataType[] inputTypes() {
      DataType[] types = new DataType[inputType.size()];
      for (int i = 0; i < types.length; i++) {
        types[i] = inputType.fields()[i].dataType();
      }
      return types;
    }

    @Override
    public DataType resultType() {
      return DataTypes.BinaryType;
    }

    @Override
    public boolean isResultNullable() {
      return false;
    }

    @Override
    public String name() {
      return sized ? SIZED : NAME;
    }

    @Override
    public String canonicalName() {
      StringBuilder name = new StringBuilder("lakecat." + name() + "(");
      for (int i = 0; i < inputType.size(); i++) {
        name.append(i == 0 ? "" : ", ").append(inputType.fields()[i].dataType().catalogString());
      }
      return name.append(")").toString();
    }

    @Override
    public byte[] produceResult(InternalRow input) {
      int variable = sized ? size(input, 0, "var_length_contribution") : VARIABLE;
      int maxSize = sized ? size(input, 1, "max_output_size") : Integer.MAX_VALUE;
      byte[][] columns = new byte[encoders.length][];
      for (int i = 0; i < encoders.length; i++) {
        columns[i] = encoders[i].encode(input, variable);
      }
      return interleave(columns, maxSize);
    }

    private static int size(InternalRow input, int i, String what) {
      if (input.isNullAt(i) || input.getInt(i) < 1) {
        throw new IllegalArgumentException(
            SIZED + ": " + what + " must be a positive int, not "
                + (input.isNullAt(i) ? "null" : input.getInt(i)));
      }
      return input.getInt(i);
    }
  }
}
