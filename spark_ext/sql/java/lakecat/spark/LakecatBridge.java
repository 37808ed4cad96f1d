package lakecat.spark;

/**
 * The Python side of a lakecat catalog, implemented by {@code lakecat.spark_ext.sql.bridge}
 * through a Py4J callback: one call per catalog operation, JSON in and out. The answer is
 * {@code {"ok": result}} or {@code {"error": {"kind": ..., "type": ..., "message": ...}}}.
 */
public interface LakecatBridge {
  String call(String method, String argumentsJson);

  /**
   * Writes a DataFrame (a {@code Dataset<Row>} of this JVM, wrapped by the Python side) into a
   * table: {@code insert} with JSON arguments, answered as {@link #call} (a JSON string), or with
   * the {@link Throwable} a Spark job of the write threw.
   */
  Object insert(String argumentsJson, Object dataset);
}
