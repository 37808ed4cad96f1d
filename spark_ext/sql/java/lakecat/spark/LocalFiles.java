package lakecat.spark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system for lakecat's native writes into a local warehouse: the same files
 * with the same permissions, without a {@code chmod} process per folder and file.
 *
 * <p>Without Hadoop's native library (the PySpark wheels ship none), {@link RawLocalFileSystem}
 * sets the permission of every folder and file it makes by starting a {@code chmod} process
 * (several milliseconds of CPU each, a dozen or more per write job). This class sets them through
 * {@code java.nio.file.Files.setPosixFilePermissions} instead, with the mode Hadoop computed (the
 * umask of {@code fs.permissions.umask-mode} already applied); where the file store has no POSIX
 * permissions it falls back to Hadoop's way. Being a raw file system, it also writes no {@code
 * .crc} sibling files (which the write deleted afterwards). The Python side passes it as the
 * write's {@code fs.file.impl} option, which reaches only that write's Hadoop configuration.
 */
public final class LocalFiles extends RawLocalFileSystem {
  // bit i of a POSIX mode (0 = others' execute ... 8 = owner's read)
  private static final PosixFilePermission[] BITS = {
    PosixFilePermission.OTHERS_EXECUTE,
    PosixFilePermission.OTHERS_WRITE,
    PosixFilePermission.OTHERS_READ,
    PosixFilePermission.GROUP_EXECUTE,
    PosixFilePermission.GROUP_WRITE,
    PosixFilePermission.GROUP_READ,
    PosixFilePermission.OWNER_EXECUTE,
    PosixFilePermission.OWNER_WRITE,
    PosixFilePermission.OWNER_READ,
  };

  @Override
  public void setPermission(Path path, FsPermission permission) throws IOException {
    short mode = permission.toShort();
    if ((mode & ~0777) != 0) { // sticky bit and the like: NIO cannot set them
      super.setPermission(path, permission);
      return;
    }
    Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
    for (int i = 0; i < BITS.length; i++) {
      if ((mode & (1 << i)) != 0) {
        set.add(BITS[i]);
      }
    }
    try {
      Files.setPosixFilePermissions(pathToFile(path).toPath(), set);
    } catch (UnsupportedOperationException e) { // a file store without POSIX permissions
      super.setPermission(path, permission);
    }
  }
}
