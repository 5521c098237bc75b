// SPDX-License-Identifier: Apache-2.0
/**
 * Granary for DL4J: {@link dev.granary.dl4j.GranaryDataSetIterator}, an ND4J {@code DataSetIterator} backed by a
 * Granary {@code DataLoader} — read-ahead through the tiered cache, seeded per-epoch shuffle, sharding over ranks and
 * exact resume — for {@code MultiLayerNetwork.fit} and {@code ComputationGraph.fit}.
 *
 * <p>ND4J is not brought in: the application chooses its backend ({@code nd4j-native}, a CUDA backend, …) and the
 * matching {@code nd4j-api} comes with it. {@code nd4j.api} is the module name nd4j-api 1.0.0-M2.1 declares in its
 * multi-release descriptor.
 */
module dev.granary.dl4j {
    requires transitive dev.granary.loader;
    requires transitive nd4j.api;

    exports dev.granary.dl4j;
}
