package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.apache.spark.sql.connector.catalog.ColumnDefaultValue;
import org.apache.spark.sql.connector.catalog.DefaultValue;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.GeneralScalarExpression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Spark's catalog values (partition transforms, filter predicates, table and namespace changes,
 * procedure arguments and result rows) as plain JSON trees for the Python side, which gives them their meaning. Nothing here knows
 * lakecat's formats: each value is written field by field as Spark defines it.
 */
final class SparkJson {
  private SparkJson() {}

  // ---- transforms: {"name": "bucket", "args": [{"literal": "16"}, {"ref": ["id"]}]} -------
  static ArrayNode transforms(Transform[] transforms) {
    ArrayNode out = BridgeClient.JSON.createArrayNode();
    for (Transform t : transforms) {
      ObjectNode node = out.addObject();
      node.put("name", t.name());
      ArrayNode args = node.putArray("args");
      for (Expression arg : t.arguments()) {
        args.add(expression(arg));
      }
    }
    return out;
  }

  static Transform[] transforms(JsonNode array) {
    List<Transform> out = new ArrayList<>();
    for (JsonNode node : array) {
      out.add(transform(node));
    }
    return out.toArray(new Transform[0]);
  }

  /** One transform ({@code {"name": ..., "args": [{"ref": [...]} | {"literal": n}]}}). */
  static Transform transform(JsonNode node) {
    List<Expression> args = new ArrayList<>();
    for (JsonNode arg : node.path("args")) {
      if (arg.has("ref")) {
        args.add(Expressions.column(quoted(Names.strings(arg.get("ref")))));
      } else {
        args.add(Expressions.literal(arg.get("literal").asInt()));
      }
    }
    return Expressions.apply(node.get("name").asText(), args.toArray(new Expression[0]));
  }

  private static String quoted(String[] parts) {
    StringBuilder out = new StringBuilder();
    for (String part : parts) {
      out.append(out.length() == 0 ? "" : ".").append('`').append(part.replace("`", "``")).append('`');
    }
    return out.toString();
  }

  // ---- predicates and their operands -----------------------------------------------------
  static ArrayNode expressions(Expression[] expressions) {
    ArrayNode out = BridgeClient.JSON.createArrayNode();
    for (Expression e : expressions) {
      out.add(expression(e));
    }
    return out;
  }

  static ObjectNode expression(Expression e) {
    ObjectNode node = BridgeClient.JSON.createObjectNode();
    if (e instanceof NamedReference) {
      node.set("ref", Names.array(((NamedReference) e).fieldNames()));
    } else if (e instanceof Literal) {
      Literal<?> literal = (Literal<?>) e;
      Object value = literal.value();
      if (value == null) {
        node.putNull("literal");
      } else if (value instanceof byte[]) {
        node.put("literal", Base64.getEncoder().encodeToString((byte[]) value));
      } else {
        node.put("literal", value.toString()); // Catalyst's internal form, e.g. micros, days
      }
      node.put("type", literal.dataType().typeName());
    } else if (e instanceof GeneralScalarExpression) {
      GeneralScalarExpression g = (GeneralScalarExpression) e;
      node.put("op", g.name());
      node.set("children", expressions(g.children()));
    } else {
      node.put("unsupported", e.toString());
    }
    return node;
  }

  // ---- changes ---------------------------------------------------------------------------
  static ArrayNode tableChanges(TableChange[] changes) {
    ArrayNode out = BridgeClient.JSON.createArrayNode();
    for (TableChange change : changes) {
      ObjectNode node = out.addObject();
      node.put("change", change.getClass().getSimpleName());
      if (change instanceof TableChange.ColumnChange) {
        node.set("column", Names.array(((TableChange.ColumnChange) change).fieldNames()));
      }
      if (change instanceof TableChange.SetProperty) {
        TableChange.SetProperty c = (TableChange.SetProperty) change;
        node.put("key", c.property()).put("value", c.value());
      } else if (change instanceof TableChange.RemoveProperty) {
        node.put("key", ((TableChange.RemoveProperty) change).property());
      } else if (change instanceof TableChange.AddColumn) {
        TableChange.AddColumn c = (TableChange.AddColumn) change;
        node.put("type", c.dataType().json()).put("nullable", c.isNullable());
        node.put("comment", c.comment());
        node.put("position", position(c.position()));
        if (c.defaultValue() != null) {
          node.set("default", defaultValue(c.defaultValue()));
        }
      } else if (change instanceof TableChange.RenameColumn) {
        node.put("new_name", ((TableChange.RenameColumn) change).newName());
      } else if (change instanceof TableChange.DeleteColumn) {
        node.put("if_exists", Boolean.TRUE.equals(((TableChange.DeleteColumn) change).ifExists()));
      } else if (change instanceof TableChange.UpdateColumnType) {
        node.put("type", ((TableChange.UpdateColumnType) change).newDataType().json());
      } else if (change instanceof TableChange.UpdateColumnNullability) {
        node.put("nullable", ((TableChange.UpdateColumnNullability) change).nullable());
      } else if (change instanceof TableChange.UpdateColumnComment) {
        node.put("comment", ((TableChange.UpdateColumnComment) change).newComment());
      } else if (change instanceof TableChange.UpdateColumnDefaultValue) {
        TableChange.UpdateColumnDefaultValue c = (TableChange.UpdateColumnDefaultValue) change;
        String sql = c.newDefaultValue();
        // DROP DEFAULT: no default (Spark passes an empty text)
        node.set(
            "default",
            sql == null || sql.isEmpty()
                ? BridgeClient.JSON.nullNode()
                : defaultValue(c.newCurrentDefault()));
      } else if (change instanceof TableChange.UpdateColumnPosition) {
        node.put("position", position(((TableChange.UpdateColumnPosition) change).position()));
      }
    }
    return out;
  }

  /**
   * A column default Spark analyzed ({@code ADD COLUMN ... DEFAULT}, {@code ALTER COLUMN ... SET
   * DEFAULT}) as {@code {"value": ...}}: its constant value (booleans, integers, dates in days,
   * timestamps in microseconds, floating-point numbers, decimals as their text, strings, binary
   * as hex), or {@code {"unknown": true}} when Spark passes no constant.
   */
  private static JsonNode defaultValue(DefaultValue value) {
    ObjectNode out = BridgeClient.JSON.createObjectNode();
    Expression expression =
        value instanceof ColumnDefaultValue
            ? ((ColumnDefaultValue) value).getValue()
            : value == null ? null : value.getExpression();
    if (!(expression instanceof Literal)) {
      return out.put("unknown", true);
    }
    Object v = ((Literal<?>) expression).value();
    if (v == null) {
      out.putNull("value");
    } else if (v instanceof Boolean) {
      out.put("value", (Boolean) v);
    } else if (v instanceof Float || v instanceof Double) {
      out.put("value", ((Number) v).doubleValue());
    } else if (v instanceof Number) { // integers, dates (days), timestamps (microseconds)
      out.put("value", ((Number) v).longValue());
    } else if (v instanceof Decimal) {
      out.put("value", ((Decimal) v).toJavaBigDecimal().toPlainString());
    } else if (v instanceof byte[]) {
      StringBuilder hex = new StringBuilder();
      for (byte b : (byte[]) v) {
        hex.append(String.format("%02x", b));
      }
      out.put("value", hex.toString());
    } else {
      out.put("value", v.toString()); // UTF8String
    }
    return out;
  }

  /** null (unchanged), "first", or "after:<column>". */
  private static String position(TableChange.ColumnPosition position) {
    if (position == null) {
      return null;
    }
    if (position instanceof TableChange.After) {
      return "after:" + ((TableChange.After) position).column();
    }
    return "first";
  }

  static ArrayNode namespaceChanges(NamespaceChange[] changes) {
    ArrayNode out = BridgeClient.JSON.createArrayNode();
    for (NamespaceChange change : changes) {
      ObjectNode node = out.addObject();
      node.put("change", change.getClass().getSimpleName());
      if (change instanceof NamespaceChange.SetProperty) {
        NamespaceChange.SetProperty c = (NamespaceChange.SetProperty) change;
        node.put("key", c.property()).put("value", c.value());
      } else if (change instanceof NamespaceChange.RemoveProperty) {
        node.put("key", ((NamespaceChange.RemoveProperty) change).property());
      }
    }
    return out;
  }

  // ---- procedure arguments and results ---------------------------------------------------
  /** A procedure argument (Catalyst's internal value) as JSON: timestamps in microseconds. */
  static JsonNode value(Object value, DataType type) {
    if (value == null) {
      return BridgeClient.JSON.nullNode();
    }
    if (type instanceof MapType) {
      MapData map = (MapData) value;
      MapType mapType = (MapType) type;
      ObjectNode out = BridgeClient.JSON.createObjectNode();
      ArrayData keys = map.keyArray();
      ArrayData values = map.valueArray();
      for (int i = 0; i < map.numElements(); i++) {
        Object v = values.isNullAt(i) ? null : values.get(i, mapType.valueType());
        out.set(keys.get(i, mapType.keyType()).toString(), value(v, mapType.valueType()));
      }
      return out;
    }
    if (type instanceof ArrayType) {
      ArrayData array = (ArrayData) value;
      DataType element = ((ArrayType) type).elementType();
      ArrayNode out = BridgeClient.JSON.createArrayNode();
      for (int i = 0; i < array.numElements(); i++) {
        out.add(value(array.isNullAt(i) ? null : array.get(i, element), element));
      }
      return out;
    }
    if (value instanceof Boolean) {
      return BridgeClient.JSON.getNodeFactory().booleanNode((Boolean) value);
    }
    if (value instanceof Number) { // integers, longs, and timestamps (micros)
      return BridgeClient.JSON.getNodeFactory().numberNode(((Number) value).longValue());
    }
    return BridgeClient.JSON.getNodeFactory().textNode(value.toString()); // UTF8String
  }

  /**
   * A value the bridge answers as Spark holds it in a row of {@code type}: booleans, integers
   * and dates (days), longs and timestamps (microseconds), decimals (their text), strings.
   */
  static Object internal(JsonNode value, DataType type) {
    if (value == null || value.isNull()) {
      return null;
    }
    if (type instanceof BooleanType) {
      return value.asBoolean();
    }
    if (type instanceof IntegerType || type instanceof DateType) {
      return value.asInt();
    }
    if (type instanceof DecimalType) {
      DecimalType decimal = (DecimalType) type;
      return Decimal.apply(
          new java.math.BigDecimal(value.asText()), decimal.precision(), decimal.scale());
    }
    if (type instanceof StringType) {
      return UTF8String.fromString(value.asText());
    }
    return value.asLong(); // long, timestamp
  }

  /** A result row (a JSON array in the schema's order) as Catalyst's internal row. */
  static InternalRow row(JsonNode values, StructType schema) {
    Object[] out = new Object[schema.fields().length];
    for (int i = 0; i < out.length; i++) {
      JsonNode v = values.get(i);
      DataType type = schema.fields()[i].dataType();
      if (v == null || v.isNull()) {
        out[i] = null;
      } else if (type instanceof LongType) {
        out[i] = v.asLong();
      } else if (type instanceof IntegerType) {
        out[i] = v.asInt();
      } else if (type instanceof BooleanType) {
        out[i] = v.asBoolean();
      } else {
        out[i] = UTF8String.fromString(v.asText());
      }
    }
    return new GenericInternalRow(out);
  }
}
