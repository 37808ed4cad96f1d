package lakecat.spark;

/**
 * The Python side of a lakecat catalog, implemented by {@code lakecat.spark_ext.sql.bridge}
 * through a Py4J callback: one call per catalog operation, JSON in and out. The answer is
 * {@code {"ok": result}} or {@code {"error": {"kind": ..., "type": ..., "message": ...}}}.
 */
public interface LakecatBridge {
  String call(String method, String argumentsJson);
}
