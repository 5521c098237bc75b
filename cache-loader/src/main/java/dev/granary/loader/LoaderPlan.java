// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.util.List;

/**
 * A dry run of a {@link DataLoader}'s coming epochs, from {@link DataLoader#plan}: for each epoch, the reads each tier
 * would serve and what the origin would be asked — predicted by running the loader's own sampler against a copy of
 * its cache's tiers (their contents now, their exact capacities and the admission rule they apply while a loader
 * drives them), without reading any data.
 *
 * {@snippet :
 * LoaderPlan plan = loader.plan(3);
 * for (EpochPlan e : plan.epochs()) {
 *     System.out.printf("epoch %d: hit ratio %.2f, %d origin requests, %d bytes, $%.4f%n", e.epoch(), e.hitRatio(),
 *             e.originRequests(), e.originBytes(), e.requestCost(0.0004));
 * }
 * }
 *
 * <p>Immutable and thread-safe; a snapshot of a prediction, not updated as epochs run.
 *
 * @param tiers  the cache's tiers, by name, in lookup order
 * @param epochs one prediction per epoch, in the order they would run
 */
public record LoaderPlan(List<String> tiers, List<EpochPlan> epochs) {

    /**
     * Copies the lists.
     *
     * @throws IllegalArgumentException if a list is null or {@code epochs} is empty
     */
    public LoaderPlan {
        if (tiers == null || epochs == null || epochs.isEmpty()) {
            throw new IllegalArgumentException("loader plan: tiers=" + tiers + ", epochs=" + epochs
                    + " (expected: a list of tier names and at least one epoch)");
        }
        tiers = List.copyOf(tiers);
        epochs = List.copyOf(epochs);
    }

    /** {@return every origin request of every epoch: data reads plus metadata requests} */
    public long originRequests() {
        long sum = 0;
        for (EpochPlan e : epochs) {
            sum += e.originRequests();
        }
        return sum;
    }

    /** {@return the bytes every epoch reads from the origin} */
    public long originBytes() {
        long sum = 0;
        for (EpochPlan e : epochs) {
            sum += e.originBytes();
        }
        return sum;
    }

    /**
     * {@return what every epoch's origin requests cost at a price per 1 000 requests}
     *
     * @param dollarsPer1000Requests the price of 1 000 GET requests, e.g. {@code 0.0004}
     * @throws IllegalArgumentException if the price is negative, infinite or NaN
     */
    public double requestCost(double dollarsPer1000Requests) {
        double sum = 0;
        for (EpochPlan e : epochs) {
            sum += e.requestCost(dollarsPer1000Requests);
        }
        return sum;
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("LoaderPlan[tiers=").append(tiers).append(']');
        for (EpochPlan e : epochs) {
            b.append("\n  ").append(e);
        }
        return b.toString();
    }
}
