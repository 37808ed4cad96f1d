package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.FilePartition;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.connector.read.HasPartitionKey;
import org.apache.spark.sql.types.DataType;

/**
 * How a read's files are grouped by partition, as the bridge's {@code plan_scan} answers it
 * with {@code spark.lakecat.preserveDataGrouping} on ({@code spark_ext/sql/grouping.py}): the
 * partition fields of the key (their ids, to plan again with the same key after a runtime
 * filter), their Spark transforms (a {@code KeyGroupedPartitioning}'s keys) and each file's key,
 * in Catalyst's internal values.
 */
final class DataGrouping {
  static final String SETTING = "spark.lakecat.preserveDataGrouping";

  final int[] fieldIds;
  final Transform[] transforms;
  final InternalRow[] keys; // one per file of the plan, in its order

  private DataGrouping(int[] fieldIds, Transform[] transforms, InternalRow[] keys) {
    this.fieldIds = fieldIds;
    this.transforms = transforms;
    this.keys = keys;
  }

  /** The plan's {@code grouping} answer; null for none. */
  static DataGrouping parse(JsonNode answer) {
    if (answer == null || answer.isNull()) {
      return null;
    }
    int[] ids = new int[answer.get("field_ids").size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = answer.get("field_ids").get(i).asInt();
    }
    DataType[] types = new DataType[ids.length];
    for (int i = 0; i < ids.length; i++) {
      types[i] = DataType.fromJson(answer.get("types").get(i).toString());
    }
    JsonNode values = answer.get("keys");
    InternalRow[] keys = new InternalRow[values.size()];
    for (int f = 0; f < keys.length; f++) {
      Object[] key = new Object[ids.length];
      for (int i = 0; i < ids.length; i++) {
        key[i] = SparkJson.internal(values.get(f).get(i), types[i]);
      }
      keys[f] = new GenericInternalRow(key);
    }
    return new DataGrouping(ids, SparkJson.transforms(answer.get("transforms")), keys);
  }

  /** Whether the session asks scans to report how their files are grouped. */
  static boolean asked() {
    return "true".equalsIgnoreCase(String.valueOf(LakecatTable.sessionConf(SETTING)));
  }

  /** A task's splits of files that share one partition key, which Spark groups tasks by. */
  static final class KeyedFilePartition extends FilePartition implements HasPartitionKey {
    private final InternalRow key;

    KeyedFilePartition(int index, PartitionedFile[] files, InternalRow key) {
      super(index, files);
      this.key = key;
    }

    @Override
    public InternalRow partitionKey() {
      return key;
    }
  }
}
