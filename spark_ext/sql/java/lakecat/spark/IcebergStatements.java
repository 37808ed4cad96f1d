package lakecat.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.sql.SparkSession;

/**
 * Iceberg's SQL extensions that Spark 4's parser lacks, as the {@code CALL} of a lakecat
 * procedure that does the same:
 *
 * <ul>
 *   <li>{@code ALTER TABLE t CREATE [OR REPLACE] BRANCH|TAG [IF NOT EXISTS] name [AS OF VERSION
 *       id] [RETAIN n DAYS|HOURS|MINUTES] [WITH SNAPSHOT RETENTION [n SNAPSHOTS] [n DAYS|HOURS|
 *       MINUTES]]} and {@code REPLACE BRANCH|TAG name ...}: {@code create_branch} / {@code
 *       create_tag};
 *   <li>{@code ALTER TABLE t DROP BRANCH|TAG [IF EXISTS] name}: {@code drop_ref};
 *   <li>{@code ALTER TABLE t ADD PARTITION FIELD term [AS name]}, {@code DROP PARTITION FIELD
 *       term|name} and {@code REPLACE PARTITION FIELD term|name WITH term [AS name]}: {@code
 *       add_partition_field} / {@code drop_partition_field} / {@code replace_partition_field};
 *   <li>{@code ALTER TABLE t SET IDENTIFIER FIELDS a, b} and {@code DROP IDENTIFIER FIELDS a}:
 *       {@code set_identifier_fields};
 *   <li>{@code ALTER TABLE t WRITE [LOCALLY] ORDERED BY ...}, {@code WRITE DISTRIBUTED BY PARTITION
 *       [LOCALLY ORDERED BY ...]}, {@code WRITE UNORDERED}: {@code set_write_order} (distribution
 *       mode range, none or hash as Iceberg sets it).
 * </ul>
 *
 * Only tables of a lakecat catalog (named in the statement, else the current catalog) are
 * rewritten; anything else, or a statement whose rest does not read as Iceberg's grammar, goes
 * to Spark's parser as it is (and gets its error).
 */
final class IcebergStatements {
  private IcebergStatements() {}

  private static final String PART = "(?:`[^`]+`|[A-Za-z_][\\w$]*)";
  private static final String IDENT = "(" + PART + "(?:\\s*\\.\\s*" + PART + ")*)";
  private static final String NAME = "(`[^`]+`|[\\w$-]+)";
  private static final String HEAD = "^\\s*ALTER\\s+TABLE\\s+" + IDENT + "\\s+";
  private static final String END = "\\s*;?\\s*$";
  private static final int FLAGS = Pattern.CASE_INSENSITIVE | Pattern.DOTALL;

  private static final Pattern CREATE_REF =
      Pattern.compile(
          HEAD
              + "(CREATE\\s+OR\\s+REPLACE|CREATE|REPLACE)\\s+(BRANCH|TAG)\\s+"
              + "(IF\\s+NOT\\s+EXISTS\\s+)?"
              + NAME
              + "(.*?)"
              + END,
          FLAGS);
  private static final Pattern DROP_REF =
      Pattern.compile(HEAD + "DROP\\s+(BRANCH|TAG)\\s+(IF\\s+EXISTS\\s+)?" + NAME + END, FLAGS);
  private static final Pattern ADD_FIELD =
      Pattern.compile(
          HEAD + "ADD\\s+PARTITION\\s+FIELD\\s+(.+?)(?:\\s+AS\\s+" + NAME + ")?" + END, FLAGS);
  private static final Pattern DROP_FIELD =
      Pattern.compile(HEAD + "DROP\\s+PARTITION\\s+FIELD\\s+(.+?)" + END, FLAGS);
  private static final Pattern REPLACE_FIELD =
      Pattern.compile(
          HEAD
              + "REPLACE\\s+PARTITION\\s+FIELD\\s+(.+?)\\s+WITH\\s+(.+?)"
              + "(?:\\s+AS\\s+"
              + NAME
              + ")?"
              + END,
          FLAGS);
  private static final Pattern IDENTIFIER_FIELDS =
      Pattern.compile(HEAD + "(SET|DROP)\\s+IDENTIFIER\\s+FIELDS\\s+(.+?)" + END, FLAGS);

  private static final Pattern ORDERED =
      Pattern.compile(HEAD + "WRITE\\s+(LOCALLY\\s+)?ORDERED\\s+BY\\s+(.+?)" + END, FLAGS);
  private static final Pattern DISTRIBUTED =
      Pattern.compile(
          HEAD
              + "WRITE\\s+DISTRIBUTED\\s+BY\\s+PARTITION"
              + "(?:\\s+LOCALLY\\s+ORDERED\\s+BY\\s+(.+?))?"
              + END,
          FLAGS);
  private static final Pattern UNORDERED = Pattern.compile(HEAD + "WRITE\\s+UNORDERED" + END, FLAGS);

  private static final Pattern AS_OF = Pattern.compile("^\\s*AS\\s+OF\\s+VERSION\\s+(\\d+)", FLAGS);
  private static final Pattern RETAIN =
      Pattern.compile("^\\s*RETAIN\\s+(\\d+)\\s+(DAYS|HOURS|MINUTES)", FLAGS);
  private static final Pattern RETENTION =
      Pattern.compile(
          "^\\s*WITH\\s+SNAPSHOT\\s+RETENTION(?:\\s+(\\d+)\\s+SNAPSHOTS)?"
              + "(?:\\s+(\\d+)\\s+(DAYS|HOURS|MINUTES))?",
          FLAGS);

  static final String CATALOG_CLASS = LakecatCatalog.class.getName();

  /** The {@code CALL} statement for {@code sql}, or null when it is not one of these. */
  static String rewrite(String sql, SparkSession session) {
    Matcher m = CREATE_REF.matcher(sql);
    if (m.matches()) {
      return createRef(m, session);
    }
    m = DROP_REF.matcher(sql);
    if (m.matches()) {
      Matcher g = m;
      return call(g.group(1), session, "drop_ref", args -> {
        args.put("ref", quote(unquote(g.group(4))));
        args.put("kind", quote(g.group(2).toLowerCase(Locale.ROOT)));
        args.put("if_exists", Boolean.toString(g.group(3) != null));
        return true;
      });
    }
    m = ADD_FIELD.matcher(sql);
    if (m.matches()) {
      Matcher g = m;
      return call(g.group(1), session, "add_partition_field", args -> {
        args.put("field", quote(g.group(2).trim()));
        putName(args, g.group(3));
        return true;
      });
    }
    m = ORDERED.matcher(sql);
    if (m.matches()) {
      return writeOrder(m.group(1), m.group(3), m.group(2) == null ? "range" : "none", session);
    }
    m = DISTRIBUTED.matcher(sql);
    if (m.matches()) {
      return writeOrder(m.group(1), m.group(2), "hash", session);
    }
    m = UNORDERED.matcher(sql);
    if (m.matches()) {
      return writeOrder(m.group(1), "", "none", session);
    }
    m = REPLACE_FIELD.matcher(sql);
    if (m.matches()) {
      Matcher g = m;
      return call(g.group(1), session, "replace_partition_field", args -> {
        args.put("field", quote(unquote(g.group(2).trim())));
        args.put("new_field", quote(g.group(3).trim()));
        putName(args, g.group(4));
        return true;
      });
    }
    m = IDENTIFIER_FIELDS.matcher(sql);
    if (m.matches()) {
      Matcher g = m;
      return call(g.group(1), session, "set_identifier_fields", args -> {
        List<String> fields = new ArrayList<>();
        for (String field : g.group(3).split(",")) {
          if (field.trim().isEmpty()) {
            return false; // not Iceberg's grammar: Spark's parser reports it
          }
          fields.add(quote(unquote(field)));
        }
        args.put("fields", "array(" + String.join(", ", fields) + ")");
        args.put("drop", Boolean.toString(g.group(2).equalsIgnoreCase("DROP")));
        return true;
      });
    }
    m = DROP_FIELD.matcher(sql);
    if (m.matches()) {
      Matcher g = m;
      return call(g.group(1), session, "drop_partition_field", args -> {
        args.put("field", quote(unquote(g.group(2).trim())));
        return true;
      });
    }
    return null;
  }

  /**
   * The {@code CALL} of {@code procedure} on the lakecat table {@code identifier} names, its
   * arguments put by {@code fill} after {@code table} (which answers false when the statement
   * does not read as Iceberg's grammar after all); null when the table is not lakecat's.
   */
  private static String call(
      String identifier,
      SparkSession session,
      String procedure,
      Predicate<Map<String, String>> fill) {
    Target target = Target.of(identifier, session);
    if (target == null) {
      return null;
    }
    Map<String, String> args = target.args();
    return fill.test(args) ? target.call(procedure, args) : null;
  }

  /** The optional {@code AS name} of a partition field. */
  private static void putName(Map<String, String> args, String name) {
    if (name != null) {
      args.put("name", quote(unquote(name)));
    }
  }

  /** {@code set_write_order}; a null order keeps the table's. */
  private static String writeOrder(
      String identifier, String order, String distribution, SparkSession session) {
    return call(identifier, session, "set_write_order", args -> {
      if (order != null) {
        args.put("order", quote(order.trim()));
      }
      args.put("distribution_mode", quote(distribution));
      return true;
    });
  }

  private static String createRef(Matcher m, SparkSession session) {
    Target target = Target.of(m.group(1), session);
    if (target == null) {
      return null;
    }
    String verb = m.group(2).toUpperCase(Locale.ROOT).replaceAll("\\s+", " ");
    boolean branch = m.group(3).equalsIgnoreCase("BRANCH");
    Map<String, String> args = target.args();
    args.put(branch ? "branch" : "tag", quote(unquote(m.group(5))));
    String rest = m.group(6);
    Matcher clause = AS_OF.matcher(rest);
    if (clause.find()) {
      args.put("snapshot_id", clause.group(1));
      rest = rest.substring(clause.end());
    }
    clause = RETAIN.matcher(rest);
    if (clause.find()) {
      args.put("max_ref_age_ms", Long.toString(millis(clause.group(1), clause.group(2))));
      rest = rest.substring(clause.end());
    }
    clause = RETENTION.matcher(rest);
    if (branch && clause.find()) {
      if (clause.group(1) != null) {
        args.put("min_snapshots_to_keep", clause.group(1));
      }
      if (clause.group(2) != null) {
        args.put("max_snapshot_age_ms", Long.toString(millis(clause.group(2), clause.group(3))));
      }
      rest = rest.substring(clause.end());
    }
    if (!rest.trim().isEmpty()) {
      return null; // not Iceberg's grammar: Spark's parser reports it
    }
    args.put("replace", Boolean.toString(!verb.equals("CREATE")));
    args.put("if_not_exists", Boolean.toString(m.group(4) != null));
    return target.call(branch ? "create_branch" : "create_tag", args);
  }

  private static long millis(String amount, String unit) {
    long n = Long.parseLong(amount);
    switch (unit.toUpperCase(Locale.ROOT)) {
      case "DAYS":
        return n * 86_400_000L;
      case "HOURS":
        return n * 3_600_000L;
      default:
        return n * 60_000L;
    }
  }

  static String unquote(String part) {
    String p = part.trim();
    return p.startsWith("`") && p.endsWith("`") ? p.substring(1, p.length() - 1) : p;
  }

  /** A Spark SQL string literal. */
  static String quote(String value) {
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'";
  }

  /** The lakecat catalog and the table (namespace and name, dotted) a statement names. */
  private static final class Target {
    final String catalog;
    final String table;

    private Target(String catalog, String table) {
      this.catalog = catalog;
      this.table = table;
    }

    static Target of(String identifier, SparkSession session) {
      List<String> parts = new ArrayList<>();
      Matcher part = Pattern.compile(PART).matcher(identifier);
      while (part.find()) {
        parts.add(unquote(part.group()));
      }
      if (parts.size() >= 3 && isLakecat(parts.get(0), session)) {
        return new Target(parts.get(0), String.join(".", parts.subList(1, parts.size())));
      }
      String current = session.catalog().currentCatalog();
      if (!isLakecat(current, session)) {
        return null;
      }
      if (parts.size() == 1) {
        parts.add(0, session.catalog().currentDatabase());
      }
      return new Target(current, String.join(".", parts));
    }

    private static boolean isLakecat(String catalog, SparkSession session) {
      return CATALOG_CLASS.equals(session.conf().get("spark.sql.catalog." + catalog, ""));
    }

    Map<String, String> args() {
      Map<String, String> args = new LinkedHashMap<>();
      args.put("table", quote(table));
      return args;
    }

    String call(String procedure, Map<String, String> args) {
      List<String> named = new ArrayList<>();
      args.forEach((k, v) -> named.add(k + " => " + v));
      return "CALL `" + catalog + "`.system." + procedure + "(" + String.join(", ", named) + ")";
    }
  }
}
