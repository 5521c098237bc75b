// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

/** {@link Sampler#sequential(int)}: indices in order, every epoch; optionally one rank's strided part. */
record SequentialSampler(int datasetSize, int rank, int worldSize) implements Sampler {

    @Override
    public Sampler shard(int rank, int worldSize) {
        Samplers.checkShard(this, rank, worldSize);
        return new SequentialSampler(datasetSize, rank, worldSize);
    }

    @Override
    public int[] fullOrder(long epoch) {
        return Samplers.identity(datasetSize, epoch);
    }

    @Override
    public int[] epoch(long epoch) {
        return Samplers.strided(fullOrder(epoch), rank, worldSize, epochSize());
    }
}
