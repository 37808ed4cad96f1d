package lakecat.spark;

import org.apache.spark.QueryContext;
import org.apache.spark.sql.AnalysisException;
import scala.Option;

/**
 * A lakecat error raised in Python, as Spark shows it: an {@link AnalysisException} whose message
 * is one readable line, {@code lakecat <ErrorType>: <message>} (PySpark raises it as
 * {@code pyspark.errors.AnalysisException}, which prints that line and no JVM stack trace). It
 * keeps what {@code lakecat.spark_ext.lakecat_error} needs to raise the typed error again in
 * Python: the error's qualified Python class, its message and its attributes (JSON).
 */
public final class LakecatException extends AnalysisException {
  private final String errorClassName;
  private final String errorMessage;
  private final String attributesJson;

  LakecatException(
      String errorType,
      String errorClassName,
      String errorMessage,
      String attributesJson,
      Throwable cause) {
    super(
        "lakecat " + errorType + ": " + errorMessage,
        Option.empty(),
        Option.empty(),
        Option.apply(cause),
        Option.empty(),
        scala.collection.immutable.Map$.MODULE$.<String, String>empty(),
        new QueryContext[0]);
    this.errorClassName = errorClassName;
    this.errorMessage = errorMessage;
    this.attributesJson = attributesJson;
  }

  /** The Python class of the error, e.g. {@code lakecat.metadata.errors.ConcurrentAppend}. */
  public String errorClassName() {
    return errorClassName;
  }

  /** The error's own message (without the {@code lakecat <ErrorType>:} prefix). */
  public String errorMessage() {
    return errorMessage;
  }

  /** The error's attributes as a JSON object (e.g. a conflict's snapshot id); "{}" if none. */
  public String attributesJson() {
    return attributesJson;
  }
}
