package lakecat.spark;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.datasketches.common.Family;
import org.apache.datasketches.memory.Memory;
import org.apache.datasketches.theta.CompactSketch;
import org.apache.datasketches.theta.SetOperationBuilder;
import org.apache.datasketches.theta.UpdateSketch;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.AggregateFunction;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * {@code ndv_sketch(column)}: an aggregate that returns the column's theta sketch as a Puffin
 * {@code apache-datasketches-theta-v1} blob holds it, the sketch {@code compute_table_stats}
 * stores for each column. It builds what Iceberg's Spark runtime builds ({@code ThetaSketchAgg}):
 * an Apache DataSketches Alpha-family update sketch (default size 4096 and seed 9001) fed each
 * non-null value's bytes in Iceberg's single-value serialization (the spec's "Binary
 * single-value serialization": little-endian numbers, UTF-8 strings, a decimal's unscaled
 * two's-complement bytes), partial sketches joined by a theta union, the result a compact ordered
 * sketch in DataSketches' serialization. Other engines merge these sketches with their own only
 * because the hashed bytes are the same.
 */
final class NdvSketch implements UnboundFunction {
  static final String NAME = "ndv_sketch";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public String description() {
    return NAME
        + "(column): the column's theta sketch (Apache DataSketches, Iceberg's "
        + "apache-datasketches-theta-v1 blob), over its non-null values";
  }

  @Override
  public BoundFunction bind(StructType inputType) {
    if (inputType.size() != 1) {
      throw new UnsupportedOperationException(NAME + " takes one argument: " + NAME + "(column)");
    }
    DataType type = inputType.fields()[0].dataType();
    Encoder encoder = encoder(type);
    if (encoder == null) {
      throw new UnsupportedOperationException(
          NAME
              + " does not take a "
              + type.catalogString()
              + ": it sketches a boolean, number, date, timestamp, string or binary column");
    }
    return new Bound(type, encoder);
  }

  /** A value's Iceberg single-value serialization, chosen once for the column's type. */
  private interface Encoder extends Serializable {
    ByteBuffer encode(InternalRow row);
  }

  private static ByteBuffer little(int size) {
    return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
  }

  private static Encoder encoder(DataType type) {
    if (type instanceof BooleanType) {
      return row -> little(1).put(0, row.getBoolean(0) ? (byte) 1 : (byte) 0);
    }
    if (type instanceof ByteType) {
      return row -> little(4).putInt(0, row.getByte(0));
    }
    if (type instanceof ShortType) {
      return row -> little(4).putInt(0, row.getShort(0));
    }
    if (type instanceof IntegerType || type instanceof DateType) {
      return row -> little(4).putInt(0, row.getInt(0));
    }
    if (type instanceof LongType
        || type instanceof TimestampType
        || type instanceof TimestampNTZType) {
      return row -> little(8).putLong(0, row.getLong(0));
    }
    if (type instanceof FloatType) {
      return row -> little(4).putFloat(0, row.getFloat(0));
    }
    if (type instanceof DoubleType) {
      return row -> little(8).putDouble(0, row.getDouble(0));
    }
    if (type instanceof StringType) {
      return row -> ByteBuffer.wrap(row.getUTF8String(0).getBytes()); // UTF-8
    }
    if (type instanceof BinaryType) {
      return row -> ByteBuffer.wrap(row.getBinary(0));
    }
    if (type instanceof DecimalType) {
      int precision = ((DecimalType) type).precision();
      int scale = ((DecimalType) type).scale();
      return row ->
          ByteBuffer.wrap(
              row.getDecimal(0, precision, scale)
                  .toJavaBigDecimal()
                  .unscaledValue()
                  .toByteArray());
    }
    return null;
  }

  /** The aggregate bound to its column's type. */
  private static final class Bound implements AggregateFunction<Sketch, byte[]> {
    private final DataType type;
    private final Encoder encoder;

    Bound(DataType type, Encoder encoder) {
      this.type = type;
      this.encoder = encoder;
    }

    @Override
    public DataType[] inputTypes() {
      return new DataType[] {type};
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
      return NAME;
    }

    @Override
    public String canonicalName() {
      return "lakecat." + NAME + "(" + type.catalogString() + ")";
    }

    @Override
    public Sketch newAggregationState() {
      return new Sketch();
    }

    @Override
    public Sketch update(Sketch state, InternalRow input) {
      if (!input.isNullAt(0)) {
        state.add(encoder.encode(input));
      }
      return state;
    }

    @Override
    public Sketch merge(Sketch left, Sketch right) {
      return left.union(right);
    }

    @Override
    public byte[] produceResult(Sketch state) {
      return state.result().toByteArray();
    }
  }

  /**
   * An aggregation state: the sketch of the rows this task added, and the compact sketch of the
   * states merged into it. Spark ships states between tasks by Java serialization, which writes
   * the compact sketch's bytes.
   */
  static final class Sketch implements Serializable {
    private static final long serialVersionUID = 1L;
    private transient UpdateSketch rows;
    private transient CompactSketch merged;

    void add(ByteBuffer value) {
      if (rows == null) {
        rows = UpdateSketch.builder().setFamily(Family.ALPHA).build();
      }
      rows.update(value);
    }

    Sketch union(Sketch other) {
      CompactSketch joined =
          new SetOperationBuilder().buildUnion().union(result(), other.result());
      rows = null;
      merged = joined;
      return this;
    }

    CompactSketch result() {
      if (rows == null && merged == null) {
        return UpdateSketch.builder().setFamily(Family.ALPHA).build().compact();
      }
      if (rows == null) {
        return merged;
      }
      if (merged == null) {
        return rows.compact();
      }
      return new SetOperationBuilder().buildUnion().union(rows, merged);
    }

    private void writeObject(ObjectOutputStream out) throws IOException {
      byte[] bytes = result().toByteArray();
      out.writeInt(bytes.length);
      out.write(bytes);
    }

    private void readObject(ObjectInputStream in) throws IOException {
      byte[] bytes = new byte[in.readInt()];
      in.readFully(bytes);
      rows = null;
      merged = CompactSketch.heapify(Memory.wrap(bytes));
    }
  }
}
