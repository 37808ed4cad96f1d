package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.SparkThrowable;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NoSuchViewException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.ViewAlreadyExistsException;

/**
 * Calls the Python bridge of one catalog and turns its typed errors into Spark's exceptions
 * (the Python side classifies them; nothing here inspects messages): Spark's own for what Spark
 * gives a meaning (no such table, already exists, ...), else a {@link LakecatException}.
 */
final class BridgeClient {
  static final ObjectMapper JSON = new ObjectMapper();

  private final String catalogName;

  BridgeClient(String catalogName) {
    this.catalogName = catalogName;
  }

  ObjectNode args() {
    return JSON.createObjectNode();
  }

  /** The result of one bridge call; throws Spark's exception for a lakecat error. */
  JsonNode call(String method, ObjectNode arguments) {
    return answer(method, Bridges.get(catalogName).call(method, arguments.toString()));
  }

  /** Writes {@code data} into a table (the bridge's {@code insert}); throws as {@link #call}. */
  void insert(ObjectNode arguments, org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> data) {
    Object answer = Bridges.get(catalogName).insert(arguments.toString(), data);
    if (answer instanceof Throwable) {
      throw sneaky((Throwable) answer); // Spark's own failure, as Spark raised it
    }
    answer("insert", (String) answer);
  }

  private JsonNode answer(String method, String answer) {
    JsonNode reply;
    try {
      reply = JSON.readTree(answer);
    } catch (java.io.IOException e) {
      throw new IllegalStateException("lakecat bridge answered " + method + " with bad JSON", e);
    }
    JsonNode error = reply.get("error");
    if (error == null) {
      return reply.get("ok");
    }
    throw sneaky(toException(error));
  }

  /**
   * A failure of Spark's Python data source (a lakecat data source's writer or commit raised in a
   * Python worker, and Spark reports the worker's traceback as {@code PYTHON_DATA_SOURCE_ERROR}):
   * as a {@link LakecatException} when the Python side finds a lakecat error in it, else the
   * failure itself. The caller throws the result.
   */
  Exception translate(Exception failure) {
    if (!(failure instanceof SparkThrowable)) {
      return failure;
    }
    SparkThrowable thrown = (SparkThrowable) failure;
    String condition = thrown.getCondition();
    if (!PYTHON_DATA_SOURCE_ERROR.equals(condition)
        && !PYTHON_STREAMING_DATA_SOURCE_ERROR.equals(condition)) {
      return failure;
    }
    String text = thrown.getMessageParameters().get("msg");
    ObjectNode args = args();
    args.put("text", text == null ? "" : text);
    JsonNode error = call("python_error", args);
    if (error == null || error.isNull()) {
      return failure;
    }
    return lakecatException(error, failure);
  }

  static final String PYTHON_DATA_SOURCE_ERROR = "PYTHON_DATA_SOURCE_ERROR";
  // a Python stream reader's failure on the driver (a SparkException, not an AnalysisException)
  static final String PYTHON_STREAMING_DATA_SOURCE_ERROR =
      "PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR";

  /** Rethrows an exception that a method does not declare (Spark's are checked in Java). */
  static RuntimeException rethrow(Exception e) {
    throw sneaky(e);
  }

  private static Exception toException(JsonNode error) {
    // The name the error is about: a namespace, or a table's namespace and name.
    String[] parts = Names.strings(error.path("parts"));
    switch (error.path("kind").asText()) {
      case "no_such_table":
        return new NoSuchTableException(Names.identifier(parts));
      case "table_exists":
        return new TableAlreadyExistsException(Names.identifier(parts));
      case "no_such_view":
        return new NoSuchViewException(Names.identifier(parts));
      case "view_exists":
        return new ViewAlreadyExistsException(Names.identifier(parts));
      case "no_such_namespace":
        return new NoSuchNamespaceException(parts);
      case "namespace_exists":
        return new NamespaceAlreadyExistsException(parts);
      case "namespace_not_empty":
        return new NonEmptyNamespaceException(parts, message(error), scala.Option.empty());
      default:
        return lakecatException(error, null);
    }
  }

  private static LakecatException lakecatException(JsonNode error, Throwable cause) {
    return new LakecatException(
        error.path("type").asText(),
        error.path("class").asText(),
        error.path("message").asText(),
        error.path("attributes").toString(),
        cause);
  }

  private static String message(JsonNode error) {
    return "lakecat " + error.path("type").asText() + ": " + error.path("message").asText();
  }

  /** Rethrows a checked Spark exception from methods that declare only some of them. */
  @SuppressWarnings("unchecked")
  private static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
    throw (E) e;
  }
}
