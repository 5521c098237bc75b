// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

/**
 * A sample could not be read or decoded, so the batch that holds it failed. Thrown by the epoch's iterator when the
 * trainer asks for that batch; the message names the sample's key, index and source (shard and offset for WebDataset
 * samples), and the cause is the origin's or the decoder's exception. The epoch goes on: the next call yields the next
 * batch.
 *
 * <p>The exception is made on the loader's worker thread, so its own stack trace shows the read or the decode. The
 * trainer's stack, where the epoch's iterator handed the failure over, is attached as a suppressed
 * {@link TrainerFrame}, as OkHttp does for failures of asynchronous calls: a log of the exception shows both.
 */
public final class SampleException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final String key;
    private final int index;
    private final long batch;

    SampleException(String key, int index, String source, long epoch, long batch, Throwable cause) {
        super(
                "sample " + index + " '" + key + "'" + (source.equals(key) ? "" : " (" + source + ")") + " of batch "
                        + batch + " of epoch " + epoch + " failed: " + cause,
                cause);
        this.key = key;
        this.index = index;
        this.batch = batch;
    }

    /** {@return the key of the sample that failed} */
    public String key() {
        return key;
    }

    /** {@return the index of the sample in its dataset} */
    public int index() {
        return index;
    }

    /** {@return the number of the failed batch within its epoch} */
    public long batch() {
        return batch;
    }

    /**
     * The trainer's stack at the moment the epoch's iterator threw a {@link SampleException}: attached to it as a
     * suppressed exception, so that a log shows which line of the training loop met the failure as well as where the
     * loader's worker met it.
     */
    public static final class TrainerFrame extends Exception {

        private static final long serialVersionUID = 1L;

        TrainerFrame(long epoch, long batch) {
            super("the trainer's thread (" + Thread.currentThread().getName() + ") asked for batch " + batch
                    + " of epoch " + epoch + " here");
        }
    }
}
