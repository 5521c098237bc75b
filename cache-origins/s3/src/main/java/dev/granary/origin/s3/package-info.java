// SPDX-License-Identifier: Apache-2.0
/**
 * The S3 origin. {@link dev.granary.origin.s3.S3Origin} reads objects of an S3 bucket (or of an S3-compatible store:
 * MinIO, Ceph RGW, S3Proxy, the S3 gateways of Alluxio and JuiceFS) by ranged GETs pinned to the ETag the cache
 * learned, retries on its own with backoff and jitter, and lists lazily through ListObjectsV2.
 */
package dev.granary.origin.s3;
