package lakecat.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.ProjectingInternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Another reader factory's readers with their columns in another order: output column {@code i}
 * is the delegate's column {@code order[i]}. Batches are rebuilt around the same column vectors
 * (nothing is copied); rows are projected. Runs on executors.
 */
final class ReorderedReaders implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;

  private final PartitionReaderFactory delegate;
  private final int[] order;
  private final StructType schema; // the delegate's columns, in the delegate's order

  ReorderedReaders(PartitionReaderFactory delegate, int[] order, StructType schema) {
    this.delegate = delegate;
    this.order = order;
    this.schema = schema;
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return delegate.supportColumnarReads(partition);
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    PartitionReader<ColumnarBatch> reader = delegate.createColumnarReader(partition);
    return new PartitionReader<ColumnarBatch>() {
      @Override
      public boolean next() throws IOException {
        return reader.next();
      }

      @Override
      public ColumnarBatch get() {
        ColumnarBatch batch = reader.get();
        ColumnVector[] columns = new ColumnVector[order.length];
        for (int i = 0; i < order.length; i++) {
          columns[i] = batch.column(order[i]);
        }
        return new ColumnarBatch(columns, batch.numRows());
      }

      @Override
      public void close() throws IOException {
        reader.close();
      }
    };
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    PartitionReader<InternalRow> reader = delegate.createReader(partition);
    ProjectingInternalRow row = projection(order, schema);
    return new PartitionReader<InternalRow>() {
      @Override
      public boolean next() throws IOException {
        return reader.next();
      }

      @Override
      public InternalRow get() {
        row.project(reader.get());
        return row;
      }

      @Override
      public void close() throws IOException {
        reader.close();
      }
    };
  }

  /** A row that shows column {@code order[i]} of the rows it projects (of {@code schema}) as i. */
  static ProjectingInternalRow projection(int[] order, StructType schema) {
    List<Object> ordinals = new ArrayList<>();
    StructType projected = new StructType();
    for (int index : order) {
      ordinals.add(index);
      projected = projected.add(schema.fields()[index]);
    }
    return ProjectingInternalRow.apply(projected, CollectionConverters.asScala(ordinals).toSeq());
  }
}
