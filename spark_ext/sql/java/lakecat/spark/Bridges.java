package lakecat.spark;

import java.util.concurrent.ConcurrentHashMap;

/** The Python bridges of this JVM, by Spark catalog name (set by lakecat.spark_ext.attach_catalog). */
public final class Bridges {
  private static final ConcurrentHashMap<String, LakecatBridge> BRIDGES = new ConcurrentHashMap<>();

  private Bridges() {}

  public static void register(String catalogName, LakecatBridge bridge) {
    BRIDGES.put(catalogName, bridge);
  }

  public static void unregister(String catalogName) {
    BRIDGES.remove(catalogName);
  }

  static LakecatBridge get(String catalogName) {
    LakecatBridge bridge = BRIDGES.get(catalogName);
    if (bridge == null) {
      throw new IllegalStateException(
          "no lakecat catalog is attached as '" + catalogName + "' in this Spark driver: create "
              + "the session with lakecat.spark_ext.session(name='" + catalogName + "', ...) or "
              + "call lakecat.spark_ext.attach_catalog(spark, '" + catalogName + "', ...)");
    }
    return bridge;
  }
}
