package lakecat.spark;

import java.math.BigDecimal;
import java.io.Serializable;
import java.math.BigInteger;
import java.time.LocalDate;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.Reducer;
import org.apache.spark.sql.connector.catalog.functions.ReducibleFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Iceberg's partition transforms as Spark SQL functions of the catalog, with the names,
 * argument types and result types of Iceberg's Spark runtime ({@code SparkFunctions}): {@code
 * years}, {@code months}, {@code days}, {@code hours}, {@code bucket} and {@code truncate},
 * called as {@code <catalog>.system.bucket(16, id)} (or without {@code system}). They compute
 * what the table spec says each transform computes (Iceberg's table spec, "Partition
 * Transforms"; lakecat's Python transforms in {@code lakecat.metadata.partitioning}, which the
 * tests compare them with): timestamps and dates floor to whole hours, days, months and years
 * since 1970-01-01; {@code bucket} is the 32-bit Murmur3 hash (x86, seed 0) of the value's
 * bytes, non-negative, modulo the number of buckets; {@code truncate} floors numbers to a
 * multiple of the width and cuts strings to that many code points and binary to that many
 * bytes. {@code bucket} is a {@link ReducibleFunction}: Spark joins tables bucketed by
 * different counts of one column without a shuffle where the counts share a divisor ({@link
 * BoundBucket}). The catalog also serves the aggregate {@code ndv_sketch} ({@link NdvSketch}), the
 * column sketches of {@code compute_table_stats}, and {@code zorder} / {@code zorder_bytes}
 * ({@link ZOrder}), the key of a Z-order compaction.
 */
final class LakecatFunctions {
  private LakecatFunctions() {}

  private static final Map<String, UnboundFunction> FUNCTIONS = new LinkedHashMap<>();

  static {
    for (UnboundFunction f :
        new UnboundFunction[] {
          new Unbound("years", 1), new Unbound("months", 1), new Unbound("days", 1),
          new Unbound("hours", 1), new Unbound("bucket", 2), new Unbound("truncate", 2),
          new NdvSketch(), new ZOrder(false), new ZOrder(true)
        }) {
      FUNCTIONS.put(f.name(), f);
    }
  }

  /** The function names, as {@code FunctionCatalog.listFunctions} lists them. */
  static String[] names() {
    return FUNCTIONS.keySet().toArray(new String[0]);
  }

  /** Whether functions live in {@code namespace}: {@code system}, or none (as Iceberg's). */
  static boolean isFunctionNamespace(String[] namespace) {
    return namespace.length == 0
        || (namespace.length == 1 && namespace[0].equalsIgnoreCase("system"));
  }

  /** The function named {@code name} (case-insensitive); null when there is none. */
  static UnboundFunction load(String name) {
    return FUNCTIONS.get(name.toLowerCase(Locale.ROOT));
  }

  private static final long MICROS_PER_HOUR = 3_600_000_000L;
  private static final long MICROS_PER_DAY = 24 * MICROS_PER_HOUR;

  /** The 32-bit Murmur3 hash (x86 variant, seed 0) of {@code data}, as the spec's bucket. */
  static int murmur3(byte[] data) {
    final int c1 = 0xcc9e2d51;
    final int c2 = 0x1b873593;
    int h1 = 0;
    int blocks = data.length / 4;
    for (int i = 0; i < blocks; i++) {
      int k1 =
          (data[4 * i] & 0xff)
              | (data[4 * i + 1] & 0xff) << 8
              | (data[4 * i + 2] & 0xff) << 16
              | (data[4 * i + 3] & 0xff) << 24;
      k1 *= c1;
      k1 = Integer.rotateLeft(k1, 15);
      k1 *= c2;
      h1 ^= k1;
      h1 = Integer.rotateLeft(h1, 13);
      h1 = h1 * 5 + 0xe6546b64;
    }
    int tail = blocks * 4;
    int k1 = 0;
    switch (data.length & 3) {
      case 3:
        k1 ^= (data[tail + 2] & 0xff) << 16;
        // fall through
      case 2:
        k1 ^= (data[tail + 1] & 0xff) << 8;
        // fall through
      case 1:
        k1 ^= data[tail] & 0xff;
        k1 *= c1;
        k1 = Integer.rotateLeft(k1, 15);
        k1 *= c2;
        h1 ^= k1;
        break;
      default:
        break;
    }
    h1 ^= data.length;
    h1 ^= h1 >>> 16;
    h1 *= 0x85ebca6b;
    h1 ^= h1 >>> 13;
    h1 *= 0xc2b2ae35;
    h1 ^= h1 >>> 16;
    return h1;
  }

  /** The spec's hash of a long (also of an int, date or timestamp): its 8 little-endian bytes. */
  static int hashLong(long value) {
    byte[] bytes = new byte[8];
    for (int i = 0; i < 8; i++) {
      bytes[i] = (byte) (value >>> (8 * i));
    }
    return murmur3(bytes);
  }

  static int years(int days) {
    return LocalDate.ofEpochDay(days).getYear() - 1970;
  }

  static int months(int days) {
    LocalDate date = LocalDate.ofEpochDay(days);
    return (date.getYear() - 1970) * 12 + date.getMonthValue() - 1;
  }

  static int days(long micros) {
    return Math.toIntExact(Math.floorDiv(micros, MICROS_PER_DAY));
  }

  static int hours(long micros) {
    return Math.toIntExact(Math.floorDiv(micros, MICROS_PER_HOUR));
  }

  /** An Iceberg transform function before Spark binds it to its argument types. */
  private static final class Unbound implements UnboundFunction {
    private final String name;
    private final int arity;

    Unbound(String name, int arity) {
      this.name = name;
      this.arity = arity;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public BoundFunction bind(StructType inputType) {
      if (inputType.size() != arity) {
        throw new UnsupportedOperationException(
            name + " takes " + (arity == 1 ? "one argument" : "two arguments") + ": " + usage());
      }
      DataType value = inputType.fields()[arity - 1].dataType();
      if (arity == 2) {
        DataType first = inputType.fields()[0].dataType();
        if (!(first instanceof ByteType
            || first instanceof ShortType
            || first instanceof IntegerType)) {
          throw new UnsupportedOperationException(
              name + "'s first argument must be a tinyint, smallint or int: " + usage());
        }
      }
      Bound bound = bound(value);
      if (bound == null) {
        throw new UnsupportedOperationException(
            name + " does not take a " + value.catalogString() + ": " + usage());
      }
      return bound;
    }

    private Bound bound(DataType value) {
      boolean date = value instanceof DateType;
      boolean timestamp = value instanceof TimestampType || value instanceof TimestampNTZType;
      boolean integral =
          value instanceof ByteType || value instanceof ShortType || value instanceof IntegerType;
      switch (name) {
        case "years":
        case "months":
          if (date || timestamp) {
            return new Bound(name, value, DataTypes.IntegerType);
          }
          return null;
        case "days":
          return date || timestamp ? new Bound(name, value, DataTypes.DateType) : null;
        case "hours":
          return timestamp ? new Bound(name, value, DataTypes.IntegerType) : null;
        case "bucket":
          if (date || timestamp || integral || value instanceof LongType) {
            return new BoundBucket(value);
          }
          if (value instanceof DecimalType
              || value instanceof StringType
              || value instanceof BinaryType) {
            return new BoundBucket(value);
          }
          return null;
        case "truncate":
          if (integral || value instanceof LongType || value instanceof DecimalType) {
            return new Bound(name, value, value);
          }
          if (value instanceof StringType || value instanceof BinaryType) {
            return new Bound(name, value, value);
          }
          return null;
        default:
          return null;
      }
    }

    private String usage() {
      switch (name) {
        case "hours":
          return "hours(timestamp)";
        case "bucket":
          return "bucket(numBuckets, value), value a date, tinyint, smallint, int, bigint, "
              + "decimal, timestamp, string or binary";
        case "truncate":
          return "truncate(width, value), value a tinyint, smallint, int, bigint, decimal, "
              + "string or binary";
        default:
          return name + "(date or timestamp)";
      }
    }

    @Override
    public String description() {
      return name + ": Iceberg's " + name + " partition transform, " + usage();
    }
  }

  /** A transform bound to its value's type: computed row by row. */
  private static class Bound implements ScalarFunction<Object> {
    private final String name;
    private final DataType value;
    private final DataType result;

    Bound(String name, DataType value, DataType result) {
      this.name = name;
      this.value = value;
      this.result = result;
    }

    @Override
    public DataType[] inputTypes() {
      if (name.equals("bucket") || name.equals("truncate")) {
        return new DataType[] {DataTypes.IntegerType, value};
      }
      return new DataType[] {value};
    }

    @Override
    public DataType resultType() {
      return result;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public String canonicalName() {
      return "lakecat." + name + "(" + value.catalogString() + ")";
    }

    @Override
    public Object produceResult(InternalRow input) {
      for (int i = 0; i < input.numFields(); i++) {
        if (input.isNullAt(i)) {
          return null;
        }
      }
      switch (name) {
        case "years":
          return years(epochDay(input, 0));
        case "months":
          return months(epochDay(input, 0));
        case "days":
          return epochDay(input, 0);
        case "hours":
          return hours(input.getLong(0));
        case "bucket":
          int buckets = positive(input.getInt(0), "the number of buckets");
          return (bucketHash(input) & Integer.MAX_VALUE) % buckets;
        default:
          return truncate(input, positive(input.getInt(0), "the width"));
      }
    }

    private int epochDay(InternalRow input, int ordinal) {
      return value instanceof DateType ? input.getInt(ordinal) : days(input.getLong(ordinal));
    }

    private int bucketHash(InternalRow input) {
      if (value instanceof LongType
          || value instanceof TimestampType
          || value instanceof TimestampNTZType) {
        return hashLong(input.getLong(1));
      }
      if (value instanceof DecimalType) {
        DecimalType type = (DecimalType) value;
        BigDecimal decimal = input.getDecimal(1, type.precision(), type.scale()).toJavaBigDecimal();
        return murmur3(decimal.unscaledValue().toByteArray());
      }
      if (value instanceof StringType) {
        return murmur3(input.getUTF8String(1).getBytes());
      }
      if (value instanceof BinaryType) {
        return murmur3(input.getBinary(1));
      }
      return hashLong(integral(input, 1)); // date, tinyint, smallint, int
    }

    private Object truncate(InternalRow input, int width) {
      if (value instanceof StringType) {
        UTF8String string = input.getUTF8String(1);
        return string.numChars() <= width ? string : string.substring(0, width);
      }
      if (value instanceof BinaryType) {
        byte[] bytes = input.getBinary(1);
        return bytes.length <= width ? bytes : Arrays.copyOf(bytes, width);
      }
      if (value instanceof DecimalType) {
        DecimalType type = (DecimalType) value;
        BigDecimal decimal = input.getDecimal(1, type.precision(), type.scale()).toJavaBigDecimal();
        BigInteger unscaled = decimal.unscaledValue();
        BigInteger remainder = unscaled.mod(BigInteger.valueOf(width)); // floor: never negative
        return Decimal.apply(new BigDecimal(unscaled.subtract(remainder), decimal.scale()));
      }
      long v = value instanceof LongType ? input.getLong(1) : integral(input, 1);
      long truncated = v - Math.floorMod(v, (long) width);
      if (value instanceof ByteType) {
        return (byte) truncated;
      }
      if (value instanceof ShortType) {
        return (short) truncated;
      }
      if (value instanceof IntegerType) {
        return (int) truncated;
      }
      return truncated;
    }

    private long integral(InternalRow input, int ordinal) {
      if (value instanceof ByteType) {
        return input.getByte(ordinal);
      }
      if (value instanceof ShortType) {
        return input.getShort(ordinal);
      }
      return input.getInt(ordinal); // int, date
    }

    private int positive(int n, String what) {
      if (n <= 0) {
        throw new IllegalArgumentException(
            "lakecat " + name + ": " + what + " must be positive, not " + n);
      }
      return n;
    }
  }
  /**
   * {@code bucket} bound to its value's type, which Spark may reduce to fewer buckets (with
   * {@code spark.sql.sources.v2.bucketing.allowCompatibleTransforms.enabled}): a value's bucket
   * among {@code n} is its hash modulo {@code n}, so for any divisor {@code d} of {@code n} the
   * bucket modulo {@code d} is its bucket among {@code d}. Two tables bucketed by {@code n} and
   * {@code m} buckets of one column line up by their buckets modulo the greatest common divisor
   * of {@code n} and {@code m}, where it is above 1 (Iceberg's {@code BucketFunction} does the
   * same).
   */
  private static final class BoundBucket extends Bound
      implements ReducibleFunction<Integer, Integer> {
    BoundBucket(DataType value) {
      super("bucket", value, DataTypes.IntegerType);
    }

    @Override
    public Object produceResult(InternalRow input) {
      // declared here: Spark looks the method up on the function's own class
      return super.produceResult(input);
    }

    @Override
    public Reducer<Integer, Integer> reducer(
        int thisBuckets, ReducibleFunction<?, ?> other, int otherBuckets) {
      if (!(other instanceof BoundBucket)) {
        return null;
      }
      int common = BigInteger.valueOf(thisBuckets).gcd(BigInteger.valueOf(otherBuckets)).intValue();
      return common > 1 && common != thisBuckets ? new BucketReducer(common) : null;
    }

    @Override
    public Reducer<Integer, Integer> reducer(ReducibleFunction<?, ?> other) {
      return null; // a bucket transform always has its number of buckets
    }
  }

  /** A bucket number among some multiple of {@code buckets}, as its number among them. */
  private static final class BucketReducer implements Reducer<Integer, Integer>, Serializable {
    private final int buckets;

    BucketReducer(int buckets) {
      this.buckets = buckets;
    }

    @Override
    public Integer reduce(Integer bucket) {
      return bucket % buckets;
    }

    @Override
    public DataType resultType() {
      return DataTypes.IntegerType;
    }

    @Override
    public String displayName() {
      return "bucket % " + buckets;
    }
  }
}
