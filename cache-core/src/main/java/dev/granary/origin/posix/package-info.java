// SPDX-License-Identifier: Apache-2.0
/**
 * The POSIX origin: a directory of a local or mounted file system (Lustre, NFS, GPFS, JuiceFS or Alluxio FUSE) as a
 * Granary {@link dev.granary.spi.Origin}. See {@link dev.granary.origin.posix.PosixOrigin}.
 */
package dev.granary.origin.posix;
