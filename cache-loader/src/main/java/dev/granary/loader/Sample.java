// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.Lease;
import java.nio.ByteBuffer;
import java.util.Map;

/**
 * One sample of a {@link Dataset}, as its decoder sees it: the key, the position in the dataset, and the bytes — one
 * buffer for a sample that is one object, named fields for a WebDataset sample ({@code jpg}, {@code cls}, …).
 *
 * <p>The buffers are read-only views of cached memory, valid only while the decoder runs: the loader releases them as
 * soon as the decoder returns, and the memory may then hold another sample's bytes. A decoder copies what it keeps.
 * Not thread-safe: one decoder call owns it.
 */
public final class Sample {

    private final String key;
    private final int index;
    private final String source;
    private final Map<String, ByteBuffer> fields;
    /** The sample's whole, when it is not its one field (a TFRecord record beside its features); else null. */
    private final ByteBuffer whole;
    /**
     * Gives the memory under {@link #fields} back: closes the sample's own lease, or drops its reference on the
     * shard part it is a slice of (see ShardStream). Called once, by the loader, when the decoder returned.
     */
    private final Runnable release;

    /** A sample whose bytes are views of one lease of its own, closed on release. */
    Sample(String key, int index, String source, Map<String, ByteBuffer> fields, Lease lease) {
        this(key, index, source, fields, null, lease::close);
    }

    /** A sample with a whole besides its fields ({@link ShardFormat#bytes}), over one lease of its own. */
    Sample(String key, int index, String source, Map<String, ByteBuffer> fields, ByteBuffer whole, Lease lease) {
        this(key, index, source, fields, whole, lease::close);
    }

    /** A sample whose memory is given back by {@code release}, which must be safe to call from any thread. */
    Sample(String key, int index, String source, Map<String, ByteBuffer> fields, Runnable release) {
        this(key, index, source, fields, null, release);
    }

    /** The general form: {@code whole} may be null. */
    Sample(String key, int index, String source, Map<String, ByteBuffer> fields, ByteBuffer whole, Runnable release) {
        this.key = key;
        this.index = index;
        this.source = source;
        this.fields = fields;
        this.whole = whole;
        this.release = release;
    }

    /** {@return the sample's key: the object key, or the WebDataset sample key ({@code train/n0153})} */
    public String key() {
        return key;
    }

    /** {@return the sample's index in its dataset, {@code 0 ≤ index < dataset.size()}} */
    public int index() {
        return index;
    }

    /** {@return where the bytes come from, for messages: the object key, or the shard and the byte offset} */
    public String source() {
        return source;
    }

    /**
     * {@return the sample's bytes}: a read-only buffer, valid while the decoder runs — the object, the record of a
     * TFRecord file (its features are in {@link #fields()}), the token window of a token dataset, or a sample's one
     * field
     *
     * @throws IllegalStateException if the sample is made of several fields and nothing else (a WebDataset sample with
     *                               {@code jpg} and {@code cls}): use {@link #fields()}
     */
    public ByteBuffer bytes() {
        if (whole != null) {
            return whole.duplicate();
        }
        if (fields.size() != 1) {
            throw new IllegalStateException("sample '" + key + "' has fields " + fields.keySet()
                    + " (expected: one field for bytes(); use fields())");
        }
        return fields.values().iterator().next().duplicate();
    }

    /**
     * {@return the sample's fields by name}, in the order they are stored: for a WebDataset sample its members'
     * extensions ({@code seg.png}, {@code cls}); for an object its key's extension ({@code jpg}), or {@code ""} if
     * it has none. The buffers are read-only, valid while the decoder runs.
     */
    public Map<String, ByteBuffer> fields() {
        return fields;
    }

    /** {@return the number of bytes over all fields} */
    public long size() {
        long n = 0;
        for (ByteBuffer b : fields.values()) {
            n += b.remaining();
        }
        return n;
    }

    void release() {
        release.run();
    }

    @Override
    public String toString() {
        return "Sample[" + index + ", '" + key + "', " + fields.keySet() + "]";
    }
}
