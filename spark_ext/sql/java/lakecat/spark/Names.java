package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.sql.connector.catalog.Identifier;

/** Names and string maps between Spark's Java types and JSON. */
final class Names {
  private Names() {}

  static String[] strings(JsonNode array) {
    String[] out = new String[array.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = array.get(i).asText();
    }
    return out;
  }

  static ArrayNode array(String[] values) {
    ArrayNode out = BridgeClient.JSON.createArrayNode();
    for (String value : values) {
      out.add(value);
    }
    return out;
  }

  static Identifier identifier(String[] parts) {
    if (parts.length == 0) {
      return Identifier.of(new String[0], "");
    }
    return Identifier.of(Arrays.copyOf(parts, parts.length - 1), parts[parts.length - 1]);
  }

  /** {"namespace": [...], "name": ...} of a table identifier, into the given arguments. */
  static ObjectNode put(ObjectNode args, Identifier ident) {
    args.set("namespace", array(ident.namespace()));
    args.put("name", ident.name());
    return args;
  }

  static Map<String, String> map(JsonNode object) {
    Map<String, String> out = new LinkedHashMap<>();
    if (object != null) {
      object.properties().forEach(e -> out.put(e.getKey(), e.getValue().asText()));
    }
    return out;
  }

  static ObjectNode object(Map<String, String> values) {
    ObjectNode out = BridgeClient.JSON.createObjectNode();
    if (values != null) {
      values.forEach(out::put);
    }
    return out;
  }
}
