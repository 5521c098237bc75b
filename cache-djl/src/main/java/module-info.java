// SPDX-License-Identifier: Apache-2.0
/**
 * Granary's DJL adapter: {@link dev.granary.djl.GranaryDataset}, a DJL {@code Dataset} whose epochs come from a
 * Granary {@link dev.granary.loader.DataLoader}. DJL's types are part of this module's API, so its API module is
 * required transitively; it is an automatic module ({@code ai.djl.api}, from its manifest), and users bring their own
 * DJL version and engine.
 */
@SuppressWarnings("requires-transitive-automatic")
module dev.granary.djl {
    requires transitive dev.granary.loader;
    requires transitive ai.djl.api;

    exports dev.granary.djl;
}
