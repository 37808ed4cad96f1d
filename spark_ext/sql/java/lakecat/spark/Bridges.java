package lakecat.spark;

import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.datasources.DataSourceManager;

/** The Python bridges of this JVM, by Spark catalog name (set by lakecat.spark_ext.attach_catalog). */
public final class Bridges {
  private static final ConcurrentHashMap<String, LakecatBridge> BRIDGES = new ConcurrentHashMap<>();
  private static final ConcurrentHashMap<String, SparkSession> SESSIONS = new ConcurrentHashMap<>();

  private Bridges() {}

  /**
   * Serve {@code catalogName} from {@code bridge}; {@code session} (a {@code SparkSession}) is
   * the session that attached it, where its Python data sources are registered.
   */
  public static void register(String catalogName, LakecatBridge bridge, Object session) {
    BRIDGES.put(catalogName, bridge);
    SESSIONS.put(catalogName, (SparkSession) session);
  }

  public static void unregister(String catalogName) {
    BRIDGES.remove(catalogName);
    SESSIONS.remove(catalogName);
  }

  /**
   * Make the Python data source {@code format} known to the active session: Spark registers a
   * Python data source per session, and another session of the application (say {@code
   * spark.newSession()}) sees the catalog, whose tables read and write through it, but not the
   * data source. It is registered there as the attaching session holds it. False when no
   * attaching session holds it.
   */
  static synchronized boolean shareDataSource(String format) {
    DataSourceManager target = active().sessionState().dataSourceManager();
    if (target.dataSourceExists(format)) {
      return true;
    }
    for (SparkSession session : SESSIONS.values()) {
      DataSourceManager source = session.sessionState().dataSourceManager();
      if (source != target && source.dataSourceExists(format)) {
        target.registerDataSource(format, source.lookupDataSource(format));
        return true;
      }
    }
    return false;
  }

  private static SparkSession active() {
    return (SparkSession) org.apache.spark.sql.SparkSession.active();
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
