// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.util.Arrays;

/** Prints one epoch's order, for SamplerTest's cross-JVM check: args = size seed epoch rank worldSize. */
public final class SamplerOrderMain {

    private SamplerOrderMain() {}

    public static void main(String[] args) {
        Sampler s = Sampler.shuffled(Integer.parseInt(args[0]), Long.parseLong(args[1]))
                .shard(Integer.parseInt(args[3]), Integer.parseInt(args[4]));
        System.out.println(Arrays.toString(s.epoch(Long.parseLong(args[2]))));
    }
}
