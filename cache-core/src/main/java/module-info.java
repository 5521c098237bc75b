// SPDX-License-Identifier: Apache-2.0
/**
 * Granary's core: the {@link dev.granary.TieredCache} facade, the SPIs that tiers and origins implement, and the POSIX
 * origin. Needs nothing but the JDK; logs through {@link java.lang.System.Logger} (route it to SLF4J or Log4j with
 * their JDK platform logging bridges).
 */
module dev.granary.core {
    exports dev.granary;
    exports dev.granary.spi;
    exports dev.granary.origin.posix;
}
