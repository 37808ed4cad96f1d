package lakecat.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult;
import org.apache.spark.sql.catalyst.parser.TemporalIdentifier;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;

/**
 * Spark's parser, except for the Iceberg statements {@link IcebergStatements} recognizes on a
 * lakecat catalog's table: those are rewritten into the {@code CALL <catalog>.system.<name>}
 * statement that does the same, which Spark's parser then parses. Everything else goes to
 * Spark's parser untouched.
 */
final class LakecatSqlParser implements ParserInterface {
  private final SparkSession session;
  private final ParserInterface delegate;

  LakecatSqlParser(SparkSession session, ParserInterface delegate) {
    this.session = session;
    this.delegate = delegate;
  }

  private String rewritten(String sql) {
    String call = IcebergStatements.rewrite(sql, session);
    return call == null ? sql : call;
  }

  @Override
  public LogicalPlan parsePlan(String sql) throws ParseException {
    return delegate.parsePlan(rewritten(sql));
  }

  @Override
  public LogicalPlan parsePlanWithParameters(String sql, ParameterContext context)
      throws ParseException {
    return delegate.parsePlanWithParameters(rewritten(sql), context);
  }

  @Override
  public Expression parseExpression(String sql) throws ParseException {
    return delegate.parseExpression(sql);
  }

  @Override
  public TableIdentifier parseTableIdentifier(String sql) throws ParseException {
    return delegate.parseTableIdentifier(sql);
  }

  @Override
  public FunctionIdentifier parseFunctionIdentifier(String sql) throws ParseException {
    return delegate.parseFunctionIdentifier(sql);
  }

  @Override
  public Seq<String> parseMultipartIdentifier(String sql) throws ParseException {
    return delegate.parseMultipartIdentifier(sql);
  }

  @Override
  public TemporalIdentifier parseTemporalTableIdentifier(String sql) throws ParseException {
    return delegate.parseTemporalTableIdentifier(sql);
  }

  @Override
  public LogicalPlan parseQuery(String sql) throws ParseException {
    return delegate.parseQuery(sql);
  }

  @Override
  public StructType parseRoutineParam(String sql) throws ParseException {
    return delegate.parseRoutineParam(sql);
  }

  @Override
  public SqlStatementSplitResult splitStatements(String sql) {
    return delegate.splitStatements(sql);
  }

  @Override
  public StructType parseTableSchema(String sql) throws ParseException {
    return delegate.parseTableSchema(sql);
  }

  @Override
  public DataType parseDataType(String sql) throws ParseException {
    return delegate.parseDataType(sql);
  }
}
