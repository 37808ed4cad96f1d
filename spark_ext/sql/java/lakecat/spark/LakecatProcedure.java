package lakecat.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Collections;
import java.util.Iterator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * One procedure of {@code <catalog>.system}, as the Python side describes it (name, parameters
 * with their Spark types, result columns). Spark matches the {@code CALL}'s positional and named
 * arguments to the parameters, checks the required ones and casts the values; {@link #call} sends
 * the values to the Python side, which runs the procedure, and returns its rows.
 */
final class LakecatProcedure implements UnboundProcedure, BoundProcedure {
  private final BridgeClient bridge;
  private final String name;
  private final String description;
  private final ProcedureParameter[] parameters;
  private final StructType result;

  LakecatProcedure(BridgeClient bridge, JsonNode descriptor) {
    this.bridge = bridge;
    this.name = descriptor.get("name").asText();
    this.description = descriptor.path("description").asText();
    JsonNode params = descriptor.get("parameters");
    this.parameters = new ProcedureParameter[params.size()];
    for (int i = 0; i < parameters.length; i++) {
      JsonNode param = params.get(i);
      ProcedureParameter.Builder builder =
          ProcedureParameter.in(
              param.get("name").asText(), DataType.fromJson(param.get("type").asText()));
      if (!param.path("required").asBoolean()) {
        builder = builder.defaultValue("NULL"); // Iceberg's optional parameters: NULL, "not given"
      }
      parameters[i] = builder.build();
    }
    this.result = (StructType) DataType.fromJson(descriptor.get("result").asText());
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String description() {
    return description;
  }

  /**
   * One signature per procedure. The Python side refuses argument types Spark would cast only to
   * fail when the call runs (a string for a number); Spark then checks names, required arguments
   * and the rest of the types against {@link #parameters}.
   */
  @Override
  public BoundProcedure bind(StructType inputType) {
    ObjectNode args = bridge.args();
    args.put("procedure", name);
    args.put("input_type", inputType.json());
    bridge.call("bind_procedure", args);
    return this;
  }

  @Override
  public ProcedureParameter[] parameters() {
    return parameters;
  }

  @Override
  public boolean isDeterministic() {
    return false;
  }

  @Override
  public Iterator<Scan> call(InternalRow input) {
    ObjectNode args = bridge.args();
    args.put("procedure", name);
    ObjectNode values = args.putObject("arguments");
    for (int i = 0; i < parameters.length; i++) {
      if (!input.isNullAt(i)) { // NULL: not given
        DataType type = parameters[i].dataType();
        values.set(parameters[i].name(), SparkJson.value(input.get(i, type), type));
      }
    }
    JsonNode rows = bridge.call("call_procedure", args);
    InternalRow[] out = new InternalRow[rows.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = SparkJson.row(rows.get(i), result);
    }
    return Collections.<Scan>singletonList(new Result(result, out)).iterator();
  }

  /** A procedure's rows. */
  private static final class Result implements LocalScan {
    private final StructType schema;
    private final InternalRow[] rows;

    Result(StructType schema, InternalRow[] rows) {
      this.schema = schema;
      this.rows = rows;
    }

    @Override
    public StructType readSchema() {
      return schema;
    }

    @Override
    public InternalRow[] rows() {
      return rows;
    }

    @Override
    public String description() {
      return "lakecat procedure result";
    }
  }
}
