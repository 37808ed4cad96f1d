package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;

/**
 * Calls the Python bridge of one catalog and turns its typed errors into Spark's exceptions
 * (the Python side classifies them; nothing here inspects messages).
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
    String answer = Bridges.get(catalogName).call(method, arguments.toString());
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

  private static Exception toException(JsonNode error) {
    String kind = error.path("kind").asText();
    String message = "lakecat " + error.path("type").asText() + ": " + error.path("message").asText();
    // The name the error is about: a namespace, or a table's namespace and name.
    String[] parts = Names.strings(error.path("parts"));
    switch (kind) {
      case "no_such_table":
        return new NoSuchTableException(Names.identifier(parts));
      case "table_exists":
        return new TableAlreadyExistsException(Names.identifier(parts));
      case "no_such_namespace":
        return new NoSuchNamespaceException(parts);
      case "namespace_exists":
        return new NamespaceAlreadyExistsException(parts);
      case "namespace_not_empty":
        return new NonEmptyNamespaceException(parts, message, scala.Option.empty());
      case "invalid":
        return new IllegalArgumentException(message);
      case "unsupported":
        return new UnsupportedOperationException(message);
      default:
        return new IllegalStateException(message);
    }
  }

  /** Rethrows a checked Spark exception from methods that declare only some of them. */
  @SuppressWarnings("unchecked")
  private static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
    throw (E) e;
  }
}
