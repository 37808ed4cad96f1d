package lakecat.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.parquet.hadoop.ParquetOutputFormat;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.Type;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.AtomicType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Spark's Parquet file format, writing the field ids of list elements and map keys and values
 * too, which Spark's own writer cannot express: Spark writes a column's or struct field's id from
 * its {@code parquet.field.id} metadata, and an array's element or a map's key and value have no
 * field of their own to carry one. lakecat's native writes of tables with list or map columns
 * ({@code lakecat.spark_ext.native.columns}) write through this format ({@code
 * df.write.format("lakecat.spark.IdParquetFormat")}, and the tasks of merge-on-read statements):
 * such a column's or struct field's metadata also holds {@value #NESTED_IDS}, the ids of the
 * elements, keys and values inside its type in pre-order (an element's id, then the ids inside the
 * element; a key's id, the ids inside the key, the value's id, the ids inside the value), up to
 * the next struct, whose fields carry their own.
 *
 * <p>With the write option {@value RollingWriters#TARGET_SIZE_OPTION} (bytes), a task rolls to a
 * new file when the one it writes reaches that size ({@link RollingWriters}), as Iceberg's
 * writers do at {@code write.target-file-size-bytes}.
 *
 * <p>The file layout is Spark's (the standard three-level lists and maps Iceberg reads, {@code
 * spark.sql.parquet.writeLegacyFormat=false}); only the ids are added, so Spark's row writer,
 * which addresses fields by position, writes the rows unchanged.
 */
public class IdParquetFormat extends ParquetFileFormat {
  /** The metadata key of the element, key and value ids inside a field's type. */
  public static final String NESTED_IDS = "lakecat.parquet.nested.ids";

  @Override
  public OutputWriterFactory prepareWrite(
      SparkSession session,
      Job job,
      scala.collection.immutable.Map<String, String> options,
      StructType dataSchema) {
    OutputWriterFactory factory = super.prepareWrite(session, job, options, dataSchema);
    // prepareWrite names Spark's write support; the tasks make theirs from this setting
    job.getConfiguration()
        .setClass(ParquetOutputFormat.WRITE_SUPPORT_CLASS, IdWriteSupport.class, WriteSupport.class);
    scala.Option<String> target = options.get(RollingWriters.TARGET_SIZE_OPTION);
    return target.isDefined()
        ? new RollingWriters(factory, Long.parseLong(target.get().trim()))
        : factory;
  }

  /**
   * Spark's write support, its file schema given the ids of elements, keys and values, and its
   * footer the NaN count of each float and double column ({@value #NAN_COUNTS}), which Parquet's
   * statistics do not carry and Iceberg's metrics do.
   */
  public static final class IdWriteSupport extends ParquetWriteSupport {
    private NanCounts nans; // null: no float or double column, or a type not counted

    @Override
    public WriteContext init(Configuration conf) {
      WriteContext context = super.init(conf);
      StructType rows =
          (StructType) DataType.fromJson(conf.get(ParquetWriteSupport.SPARK_ROW_SCHEMA()));
      MessageType schema = context.getSchema();
      MessageType withIds =
          new MessageType(schema.getName(), withIds(schema.getFields(), rows.fields()));
      nans = NanCounts.of(rows, withIds.getColumns().size());
      return new WriteContext(withIds, context.getExtraMetaData());
    }

    @Override
    public void write(InternalRow row) {
      if (nans != null) {
        nans.count(row);
      }
      super.write(row);
    }

    @Override
    public FinalizedWriteContext finalizeWrite() {
      FinalizedWriteContext context = super.finalizeWrite();
      if (nans == null) {
        return context;
      }
      Map<String, String> extra = new HashMap<>(context.getExtraMetaData());
      extra.put(NAN_COUNTS, nans.text());
      return new FinalizedWriteContext(extra);
    }
  }

  /** The footer key of the NaN counts: {@code "<column>:<count>,..."}, a column by its index. */
  public static final String NAN_COUNTS = "lakecat.nan.counts";

  /** A visit of the values at one ordinal of a row or array, counting the NaN among them. */
  private interface Visit {
    void visit(SpecializedGetters data, int ordinal, long[] counts);
  }

  /**
   * The NaN values of each float and double Parquet column (by its index among the file's
   * columns, in Spark's order: fields in order, a list's element, a map's key then value) over
   * the rows written; nulls, and values under a null struct, list or map, are not NaN.
   */
  static final class NanCounts {
    private final List<Visit> visits = new ArrayList<>();
    private final List<Integer> ordinals = new ArrayList<>();
    private final List<Integer> columns = new ArrayList<>(); // the counted columns' indexes
    private final long[] counts;

    private NanCounts(int columnCount) {
      this.counts = new long[columnCount];
    }

    /** The counter of rows of {@code rows}; null when none of its columns is a float or a
     * double, or when a type's Parquet columns are not known here (then nothing is claimed). */
    static NanCounts of(StructType rows, int columnCount) {
      NanCounts out = new NanCounts(columnCount);
      int[] next = {0};
      StructField[] fields = rows.fields();
      for (int i = 0; i < fields.length; i++) {
        Visit visit = out.plan(fields[i].dataType(), next);
        if (visit == UNKNOWN) {
          return null;
        }
        if (visit != null) {
          out.visits.add(visit);
          out.ordinals.add(i);
        }
      }
      return next[0] == columnCount && !out.columns.isEmpty() ? out : null;
    }

    void count(InternalRow row) {
      for (int i = 0; i < visits.size(); i++) {
        visits.get(i).visit(row, ordinals.get(i), counts);
      }
    }

    String text() {
      StringBuilder out = new StringBuilder();
      for (int column : columns) {
        out.append(out.length() == 0 ? "" : ",").append(column).append(':').append(counts[column]);
      }
      return out.toString();
    }

    private static final Visit UNKNOWN = (data, ordinal, counts) -> {};

    /** The visit of a value of {@code type} whose first column is {@code next[0]} (advanced
     * past its columns); null when it holds no float or double, UNKNOWN for a type whose
     * columns are not told here. */
    private Visit plan(DataType type, int[] next) {
      if (type instanceof FloatType || type instanceof DoubleType) {
        int column = next[0]++;
        columns.add(column);
        if (type instanceof FloatType) {
          return (data, ordinal, counts) -> {
            if (!data.isNullAt(ordinal) && Float.isNaN(data.getFloat(ordinal))) {
              counts[column]++;
            }
          };
        }
        return (data, ordinal, counts) -> {
          if (!data.isNullAt(ordinal) && Double.isNaN(data.getDouble(ordinal))) {
            counts[column]++;
          }
        };
      }
      if (type instanceof StructType) {
        StructField[] fields = ((StructType) type).fields();
        List<Visit> inner = new ArrayList<>();
        List<Integer> at = new ArrayList<>();
        for (int i = 0; i < fields.length; i++) {
          Visit visit = plan(fields[i].dataType(), next);
          if (visit == UNKNOWN) {
            return UNKNOWN;
          }
          if (visit != null) {
            inner.add(visit);
            at.add(i);
          }
        }
        if (inner.isEmpty()) {
          return null;
        }
        int size = fields.length;
        return (data, ordinal, counts) -> {
          if (data.isNullAt(ordinal)) {
            return;
          }
          InternalRow struct = data.getStruct(ordinal, size);
          for (int i = 0; i < inner.size(); i++) {
            inner.get(i).visit(struct, at.get(i), counts);
          }
        };
      }
      if (type instanceof ArrayType) {
        Visit element = plan(((ArrayType) type).elementType(), next);
        if (element == null || element == UNKNOWN) {
          return element;
        }
        return (data, ordinal, counts) -> {
          if (!data.isNullAt(ordinal)) {
            ArrayData values = data.getArray(ordinal);
            for (int i = 0; i < values.numElements(); i++) {
              element.visit(values, i, counts);
            }
          }
        };
      }
      if (type instanceof MapType) {
        Visit key = plan(((MapType) type).keyType(), next);
        Visit value = plan(((MapType) type).valueType(), next);
        if (key == UNKNOWN || value == UNKNOWN) {
          return UNKNOWN;
        }
        if (key == null && value == null) {
          return null;
        }
        return (data, ordinal, counts) -> {
          if (data.isNullAt(ordinal)) {
            return;
          }
          MapData map = data.getMap(ordinal);
          for (int i = 0; i < map.numElements(); i++) {
            if (key != null) {
              key.visit(map.keyArray(), i, counts);
            }
            if (value != null) {
              value.visit(map.valueArray(), i, counts);
            }
          }
        };
      }
      if (type instanceof AtomicType) {
        next[0]++; // one column
        return null;
      }
      return UNKNOWN; // a variant, an interval, a user-defined type: not counted
    }
  }

  /** Parquet fields {@code written} (one per Spark field of {@code fields}) with the ids. */
  static List<Type> withIds(List<Type> written, StructField[] fields) {
    if (written.size() != fields.length) {
      throw new IllegalStateException(
          "lakecat: Spark's Parquet schema has " + written.size() + " fields for " + fields.length);
    }
    List<Type> out = new ArrayList<>(written.size());
    for (int i = 0; i < fields.length; i++) {
      Iterator<Integer> ids = nestedIds(fields[i].metadata()).iterator();
      out.add(withIds(written.get(i), fields[i].dataType(), ids));
      if (ids.hasNext()) {
        throw new IllegalStateException(
            "lakecat: more nested ids than elements, keys and values in " + fields[i].name());
      }
    }
    return out;
  }

  private static List<Integer> nestedIds(Metadata metadata) {
    List<Integer> ids = new ArrayList<>();
    if (metadata.contains(NESTED_IDS)) {
      for (long id : metadata.getLongArray(NESTED_IDS)) {
        ids.add(Math.toIntExact(id));
      }
    }
    return ids;
  }

  /** {@code written} (Spark's Parquet form of a value of {@code type}) with the ids. */
  private static Type withIds(Type written, DataType type, Iterator<Integer> ids) {
    if (type instanceof StructType) {
      GroupType group = written.asGroupType();
      return group.withNewFields(withIds(group.getFields(), ((StructType) type).fields()));
    }
    if (type instanceof ArrayType) {
      // <list> { repeated group list { <element> } }
      GroupType list = written.asGroupType();
      GroupType repeated = list.getType(0).asGroupType();
      Type element = withId(repeated.getType(0), ((ArrayType) type).elementType(), ids);
      return list.withNewFields(repeated.withNewFields(element));
    }
    if (type instanceof MapType) {
      // <map> { repeated group key_value { <key> <value> } }
      GroupType map = written.asGroupType();
      GroupType repeated = map.getType(0).asGroupType();
      Type key = withId(repeated.getType(0), ((MapType) type).keyType(), ids);
      Type value = withId(repeated.getType(1), ((MapType) type).valueType(), ids);
      return map.withNewFields(repeated.withNewFields(key, value));
    }
    return written;
  }

  private static Type withId(Type written, DataType type, Iterator<Integer> ids) {
    if (!ids.hasNext()) {
      throw new IllegalStateException("lakecat: no field id for " + written.getName());
    }
    int id = ids.next();
    return withIds(written, type, ids).withId(id);
  }
}
