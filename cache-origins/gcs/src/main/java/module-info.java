// SPDX-License-Identifier: Apache-2.0
/**
 * Granary's GCS origin: {@link dev.granary.origin.gcs.GcsOrigin}, over google-cloud-storage. The Google client jars
 * carry no module names, so they are required by the names the JDK derives from their file names.
 */
// requires-transitive-automatic: the Google types are part of this module's API (Storage, credentials), and their
// jars are automatic modules; users get them from their own google-cloud-storage dependency.
@SuppressWarnings("requires-transitive-automatic")
module dev.granary.origin.gcs {
    requires transitive dev.granary.core;
    requires transitive google.cloud.storage;
    requires transitive google.cloud.core;
    requires transitive com.google.auth;
    requires google.cloud.core.http;
    requires gax;

    exports dev.granary.origin.gcs;
}
