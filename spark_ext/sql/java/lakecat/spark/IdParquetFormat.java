package lakecat.spark;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.parquet.hadoop.ParquetOutputFormat;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.Type;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
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
    return factory;
  }

  /** Spark's write support, its file schema given the ids of elements, keys and values. */
  public static final class IdWriteSupport extends ParquetWriteSupport {
    @Override
    public WriteContext init(Configuration conf) {
      WriteContext context = super.init(conf);
      StructType rows =
          (StructType) DataType.fromJson(conf.get(ParquetWriteSupport.SPARK_ROW_SCHEMA()));
      MessageType schema = context.getSchema();
      MessageType withIds =
          new MessageType(schema.getName(), withIds(schema.getFields(), rows.fields()));
      return new WriteContext(withIds, context.getExtraMetaData());
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
