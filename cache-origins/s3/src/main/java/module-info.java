// SPDX-License-Identifier: Apache-2.0
/**
 * Granary's S3 origin: {@link dev.granary.origin.s3.S3Origin}, over the AWS SDK for Java v2.
 */
// "module": the name ends in the digit of S3's own name (dev.granary.origin.s3), the published one, kept.
// requires-transitive-automatic: the AWS SDK's types are part of this module's API (S3Client, credentials
// providers), and its jars are automatic modules; users get them from their own AWS SDK dependency.
@SuppressWarnings({"module", "requires-transitive-automatic"})
module dev.granary.origin.s3 {
    requires transitive dev.granary.core;
    requires transitive software.amazon.awssdk.auth;
    requires transitive software.amazon.awssdk.services.s3;
    requires software.amazon.awssdk.awscore;
    requires software.amazon.awssdk.core;
    requires software.amazon.awssdk.http;
    requires software.amazon.awssdk.http.apache;
    requires software.amazon.awssdk.http.auth.aws;
    requires software.amazon.awssdk.http.auth.spi;
    requires software.amazon.awssdk.identity.spi;
    requires software.amazon.awssdk.utils;
    requires software.amazon.awssdk.retries.api;
    requires software.amazon.awssdk.regions;

    exports dev.granary.origin.s3;
}
