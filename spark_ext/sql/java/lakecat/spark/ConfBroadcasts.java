package lakecat.spark;

import java.lang.ref.WeakReference;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.util.SerializableConfiguration;

/**
 * The broadcast Hadoop configurations of the native reads (and of the merge-on-read writes of
 * {@link NativeRows}), shared by every scan or write whose configuration has the same entries.
 *
 * <p>Spark's Parquet reader factory takes its Hadoop configuration as a broadcast. Making one
 * serializes and compresses the whole configuration (~1,000 entries), about a quarter of the
 * JVM's time in planning a small query, and a scan makes one per query. Two scans of a session
 * whose configurations hold the same entries (the same settings, the same read schema) get the
 * same broadcast: its value is never changed (each task's reader copies it into its own job
 * configuration), as the tasks of one query already share theirs.
 *
 * <p>At most {@link #KEPT} configurations are kept per Spark application, the least recently
 * used dropped first; a dropped broadcast is cleaned up by Spark's context cleaner once no
 * running scan refers to it. A stopped application's broadcasts are never handed out.
 */
final class ConfBroadcasts {
  /** How many distinct configurations are kept (per application). */
  static final int KEPT = 16;

  private static WeakReference<SparkContext> owner = new WeakReference<>(null);
  private static final Map<Map<String, String>, Broadcast<SerializableConfiguration>> CACHE =
      new LinkedHashMap<>(KEPT * 2, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(
            Map.Entry<Map<String, String>, Broadcast<SerializableConfiguration>> eldest) {
          return size() > KEPT;
        }
      };

  private ConfBroadcasts() {}

  /** A broadcast holding {@code conf}'s entries, made once per distinct set of entries. */
  static synchronized Broadcast<SerializableConfiguration> of(
      SparkContext context, Configuration conf) {
    if (owner.get() != context) {
      CACHE.clear(); // another (or a restarted) application: its broadcasts are not ours
      owner = new WeakReference<>(context);
    }
    Map<String, String> entries = new HashMap<>(conf.size() * 2);
    for (Map.Entry<String, String> entry : conf) {
      entries.put(entry.getKey(), entry.getValue());
    }
    Broadcast<SerializableConfiguration> cached = CACHE.get(entries);
    if (cached != null && !context.isStopped()) {
      return cached;
    }
    Broadcast<SerializableConfiguration> made =
        JavaSparkContext.fromSparkContext(context).broadcast(new SerializableConfiguration(conf));
    CACHE.put(entries, made);
    return made;
  }
}
