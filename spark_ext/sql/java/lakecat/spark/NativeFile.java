package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * A data file as the bridge's {@code plan_scan} hands it to Spark's Parquet reader: the path
 * lakecat records for it (the {@code _file} value), its URI for Spark, its size, and what lakecat
 * knows of its rows: the deleted positions (sorted; null: none) and, for the row lineage
 * columns, its first row id and data sequence number (null: none, or not asked for); and, for a
 * read that reports how its files are grouped ({@link DataGrouping}), its partition key (null:
 * not grouped).
 */
final class NativeFile {
  final String path;
  final String uri;
  final long size;
  final long[] deleted;
  final Long firstRowId;
  final Long sequenceNumber;
  final InternalRow key;

  private NativeFile(
      String path,
      String uri,
      long size,
      long[] deleted,
      Long firstRowId,
      Long sequenceNumber,
      InternalRow key) {
    this.path = path;
    this.uri = uri;
    this.size = size;
    this.deleted = deleted;
    this.firstRowId = firstRowId;
    this.sequenceNumber = sequenceNumber;
    this.key = key;
  }

  /**
   * The files of the plan's {@code native} answer (parallel lists, one entry per file), with
   * the keys of {@code grouping} (null: none).
   */
  static List<NativeFile> parse(JsonNode answer, DataGrouping grouping) {
    String[] paths = Names.strings(answer.get("paths"));
    String[] uris = Names.strings(answer.get("uris"));
    List<NativeFile> out = new ArrayList<>();
    for (int i = 0; i < paths.length; i++) {
      out.add(
          new NativeFile(
              paths[i],
              uris[i],
              answer.get("sizes").get(i).asLong(),
              positions(answer.get("deletes").get(i)),
              nullableLong(answer.get("first_row_ids").get(i)),
              nullableLong(answer.get("sequence_numbers").get(i)),
              grouping == null ? null : grouping.keys[i]));
    }
    return out;
  }

  private static Long nullableLong(JsonNode value) {
    return value.isNull() ? null : value.asLong();
  }

  /** Positions sent as base64 of little-endian int64s; null for none. */
  private static long[] positions(JsonNode encoded) {
    if (encoded.isNull()) {
      return null;
    }
    LongBuffer longs =
        ByteBuffer.wrap(Base64.getDecoder().decode(encoded.asText()))
            .order(ByteOrder.LITTLE_ENDIAN)
            .asLongBuffer();
    long[] out = new long[longs.remaining()];
    longs.get(out);
    return out;
  }
}
