// SPDX-License-Identifier: Apache-2.0
/**
 * Granary's core: the {@link dev.granary.TieredCache} facade, the SPIs that tiers and origins implement
 * ({@code dev.granary.spi}, contracts only), helpers for origin authors ({@code dev.granary.origin.support}), and the
 * POSIX origin. Needs nothing but the JDK; logs through {@link java.lang.System.Logger} (route it to SLF4J or Log4j
 * with their JDK platform logging bridges). {@code dev.granary.internal} is shared with Granary's own modules only.
 */
@SuppressWarnings("module") // the qualified export names modules that are not built with this one
module dev.granary.core {
    requires jdk.jfr; // FlightEvents: the dev.granary.* JFR events

    exports dev.granary;
    exports dev.granary.spi;
    exports dev.granary.origin.support;
    exports dev.granary.origin.posix;
    exports dev.granary.internal to
            dev.granary.tiers,
            dev.granary.loader;
}
