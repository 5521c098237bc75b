// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.gcs;

import com.google.api.gax.paging.Page;
import com.google.api.gax.retrying.RetrySettings;
import com.google.auth.Credentials;
import com.google.cloud.NoCredentials;
import com.google.cloud.ReadChannel;
import com.google.cloud.WriteChannel;
import com.google.cloud.http.HttpTransportOptions;
import com.google.cloud.storage.Blob;
import com.google.cloud.storage.BlobId;
import com.google.cloud.storage.BlobInfo;
import com.google.cloud.storage.Storage;
import com.google.cloud.storage.StorageException;
import com.google.cloud.storage.StorageOptions;
import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import dev.granary.origin.support.Keys;
import dev.granary.origin.support.OriginLimits;
import dev.granary.origin.support.RetryLoop;
import dev.granary.spi.Origin;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * An origin over a Google Cloud Storage bucket, or a prefix of one, through the {@code google-cloud-storage} client
 * (JSON API over HTTP).
 *
 * <h2>Versions and pinning</h2>
 * An object's version is its <em>generation</em>. Every read names that generation and is sent with
 * {@code ifGenerationMatch}: if the object was overwritten since its generation was learned, GCS refuses
 * ({@code 412}, or {@code 404} for the generation) and the read fails with {@link ObjectChangedException} — two
 * generations are never mixed, not even across the retries of one read.
 *
 * <h2>Retries and timeouts</h2>
 * As {@code S3Origin}, through the same {@link RetryLoop}: the client's own retries are off, the origin retries
 * {@code 429}, {@code 408}, {@code 5xx}, resets and timeouts for up to {@link Builder#retryBudget(Duration)} (default
 * 15 s) and at most {@link Builder#maxAttempts(int)} attempts, with exponential backoff and full jitter, counts them
 * ({@link #retries()}), and resumes a broken-off read from its first missing byte, still pinned. A request given up
 * says what it waited for: {@code "read of 'k' in gs://b/p/ failed after 9 attempts over 12.3 s: <last failure>"}.
 * {@link Builder#requestTimeout(Duration)} is the HTTP connect and read timeout of each attempt.
 *
 * <h2>Listing</h2>
 * {@link #list(String)} pages through the objects lazily (one page of at most 1 000 in memory), in GCS's
 * lexicographic order of names; folder placeholders (names ending in {@code /}) and names the cache cannot address
 * ({@code ..} segments, a leading {@code /}) are skipped.
 *
 * <p>Thread-safe; calls block, and the cache runs them on virtual threads. Build one with {@link #builder()};
 * closing it closes the client it made (a {@link Builder#storage(Storage)} passed in stays the caller's).
 */
public final class GcsOrigin implements Origin {

    private static final int LIST_PAGE = 1_000;

    private final Storage storage;
    private final boolean ownsStorage;
    private final String bucket;
    private final String prefix;
    private final URI uri;
    private final int maxConcurrency;
    private final RetryLoop.Policy retry;
    private final LongAdder retries = new LongAdder();
    private volatile boolean bucketSeen;
    private volatile boolean closed;

    private GcsOrigin(Builder b, Storage storage, boolean ownsStorage) {
        this.storage = storage;
        this.ownsStorage = ownsStorage;
        this.bucket = b.bucket;
        this.prefix = b.prefix;
        this.uri = URI.create("gs://" + b.bucket + "/" + b.prefix);
        this.maxConcurrency = b.maxConcurrency;
        this.retry = new RetryLoop.Policy(b.maxAttempts, b.retryBudget, OriginLimits.backoff(b.retryBackoff));
    }

    /** {@return a builder; {@link Builder#bucket(String)} is the one required setting} */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    public URI uri() {
        return uri;
    }

    /** {@return the bucket} */
    public String bucket() {
        return bucket;
    }

    /** {@return the name prefix every key is relative to: empty, or ending in {@code /}} */
    public String prefix() {
        return prefix;
    }

    @Override
    public int maxConcurrency() {
        return maxConcurrency;
    }

    @Override
    public long retries() {
        return retries.sum();
    }

    @Override
    public ObjectInfo stat(String key) throws IOException {
        String name = name(key);
        Blob blob = call("stat", key, () -> storage.get(BlobId.of(bucket, name)));
        if (blob == null) {
            checkBucket(null);
            throw new NoSuchObjectException(uri, key);
        }
        bucketSeen = true;
        return info(key, blob);
    }

    private ObjectInfo info(String key, Blob blob) throws IOException {
        Long generation = blob.getGeneration();
        if (generation == null) {
            throw new IOException(
                    "object '" + key + "' in " + uri + " has no generation: cannot pin reads to a" + " version");
        }
        return new ObjectInfo(key, blob.getSize() == null ? 0 : blob.getSize(), Long.toString(generation));
    }

    @Override
    public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
        Objects.requireNonNull(object, "object");
        Objects.requireNonNull(dst, "dst");
        long length = dst.byteSize();
        OriginLimits.checkRead(uri, object, position, length);
        if (length == 0) {
            return;
        }
        long generation;
        try {
            generation = Long.parseLong(object.version());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "version of '" + object.key() + "': '" + object.version()
                            + "' (expected: a GCS generation, as stat or list gave it)",
                    e);
        }
        String name = name(object.key());
        long done = 0;
        RetryLoop attempts = retry.start("read", object.key(), uri, retries);
        while (true) {
            checkOpen();
            boolean throttling = false;
            // Pinned twice: the generation in the id asks for exactly those bytes (404 once it is gone), and the
            // precondition makes GCS refuse (412) if the live object has another generation.
            try (ReadChannel channel = storage.reader(
                    BlobId.of(bucket, name, generation), Storage.BlobSourceOption.generationMatch(generation))) {
                channel.setChunkSize((int) Math.min(16L << 20, Math.max(256 * 1024, length - done)));
                channel.seek(position + done);
                channel.limit(position + length);
                ByteBuffer into = dst.asSlice(done).asByteBuffer();
                while (into.hasRemaining()) {
                    int n = channel.read(into);
                    if (n < 0) {
                        break;
                    }
                    done += n;
                }
                bucketSeen = true;
                if (done == length) {
                    return;
                }
                throw new IOException("read of '" + object.key() + "' in " + uri + " ended after " + done + " of "
                        + length + " bytes");
            } catch (StorageException | IOException e) {
                StorageException storageError = storageException(e);
                if (storageError != null) {
                    if (storageError.getCode() == 412) {
                        throw new ObjectChangedException(uri, object.key(), object.version(), null, e);
                    }
                    if (storageError.getCode() == 404) {
                        throw notFoundDuringRead(object, e);
                    }
                    throttling = storageError.getCode() == 429;
                }
                if (OriginLimits.isInterruption(e)) {
                    throw attempts.interrupted(e);
                }
                if (!retryable(e)) {
                    throw failure("read", object.key(), e, attempts);
                }
                attempts.backOff(
                        detail(e) + (done > 0 ? " (" + done + " of " + length + " bytes received)" : ""),
                        e,
                        throttling);
            }
        }
    }

    /** A 404 while reading a generation: the object is gone, or (some servers) it has another generation now. */
    private IOException notFoundDuringRead(ObjectInfo object, Exception cause) throws IOException {
        Blob now = call("stat", object.key(), () -> storage.get(BlobId.of(bucket, name(object.key()))));
        if (now != null
                && now.getGeneration() != null
                && !Long.toString(now.getGeneration()).equals(object.version())) {
            return new ObjectChangedException(
                    uri, object.key(), object.version(), Long.toString(now.getGeneration()), cause);
        }
        if (now == null) {
            checkBucket(cause);
        }
        return new NoSuchObjectException(uri, object.key(), cause);
    }

    /**
     * Uploads an object whole through a {@code WriteChannel} (a resumable upload, finalised at close: atomic in GCS,
     * readers see the old generation or the new one), with the origin's retries, then asks for the new generation.
     * A resumable upload costs a request more than a one-shot {@code storage.create}; Granary writes little (index
     * files), and it is the upload path whose generations the in-process stand-in the tests run on assigns too.
     *
     * @return the key, size and the new generation
     */
    @Override
    public ObjectInfo write(String key, byte[] bytes) throws IOException {
        if (bytes == null) {
            throw new IllegalArgumentException("bytes of '" + key + "': null (expected: the object's bytes)");
        }
        String name = name(key);
        call("write", key, () -> {
            try (WriteChannel writer =
                    storage.writer(BlobInfo.newBuilder(bucket, name).build())) {
                ByteBuffer buffer = ByteBuffer.wrap(bytes);
                while (buffer.hasRemaining()) {
                    writer.write(buffer);
                }
            } catch (IOException e) {
                throw new StorageException(e); // retried by call() like any I/O failure of the client
            }
            return null;
        });
        bucketSeen = true;
        return stat(key);
    }

    @Override
    public Stream<ObjectInfo> list(String listPrefix) throws IOException {
        Objects.requireNonNull(listPrefix, "prefix");
        checkOpen();
        Listing listing = new Listing(listPrefix);
        listing.first();
        return StreamSupport.stream(
                Spliterators.spliteratorUnknownSize(
                        listing, Spliterator.ORDERED | Spliterator.DISTINCT | Spliterator.NONNULL),
                false);
    }

    private final class Listing implements Iterator<ObjectInfo> {
        private final String listPrefix;
        private final ArrayDeque<ObjectInfo> buffered = new ArrayDeque<>();
        private Page<Blob> page;

        Listing(String listPrefix) {
            this.listPrefix = listPrefix;
        }

        void first() throws IOException {
            take(call(
                    "list",
                    listPrefix,
                    () -> storage.list(
                            bucket,
                            Storage.BlobListOption.prefix(prefix + listPrefix),
                            Storage.BlobListOption.pageSize(LIST_PAGE))));
        }

        private void take(Page<Blob> next) throws IOException {
            page = next;
            bucketSeen = true;
            for (Blob blob : next.getValues()) {
                String key = blob.getName().substring(prefix.length());
                if (Keys.addressable(key)) {
                    buffered.add(info(key, blob));
                }
            }
        }

        @Override
        public boolean hasNext() {
            try {
                while (buffered.isEmpty() && page != null && page.hasNextPage()) {
                    Page<Blob> current = page;
                    take(call("list", listPrefix, current::getNextPage));
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return !buffered.isEmpty();
        }

        @Override
        public ObjectInfo next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            return buffered.poll();
        }
    }

    @FunctionalInterface
    private interface Call<T> {
        T run();
    }

    /** Runs a metadata request with the origin's retries; a non-retryable failure becomes an IOException. */
    private <T> T call(String what, String key, Call<T> call) throws IOException {
        RetryLoop attempts = retry.start(what, key, uri, retries);
        while (true) {
            checkOpen();
            boolean throttling = false;
            try {
                return call.run();
            } catch (StorageException e) {
                if (OriginLimits.isInterruption(e)) {
                    throw attempts.interrupted(e);
                }
                if (e.getCode() == 404 && what.equals("list")) {
                    throw noSuchBucket(e);
                }
                if (!retryable(e)) {
                    throw failure(what, key, e, attempts);
                }
                throttling = e.getCode() == 429;
                attempts.backOff(detail(e), e, throttling);
            }
        }
    }

    /** Called on a 404 before any request proved the bucket exists: tells a missing bucket from a missing object. */
    private void checkBucket(Throwable cause) throws IOException {
        if (bucketSeen) {
            return;
        }
        try {
            // A one-object listing: 404 for a missing bucket, and allowed to anyone who may read objects.
            storage.list(bucket, Storage.BlobListOption.pageSize(1));
            bucketSeen = true;
        } catch (StorageException e) {
            if (e.getCode() == 404) {
                throw noSuchBucket(cause == null ? e : cause);
            }
        }
    }

    private IOException noSuchBucket(Throwable cause) {
        return new IOException(
                "no such bucket: '" + bucket + "' (origin " + uri + "); check the bucket name and,"
                        + " for an emulator, the host",
                cause);
    }

    private static StorageException storageException(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof StorageException s) {
                return s;
            }
        }
        return null;
    }

    static boolean retryable(Throwable e) {
        StorageException s = storageException(e);
        if (s != null) {
            int code = s.getCode();
            if (code == 429 || code == 408 || code >= 500) {
                return true;
            }
            if (code > 0) {
                return false; // an answer: 400, 401, 403, 404, 412, ...
            }
        }
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof IOException) {
                return true; // a reset, a timeout, a refused connection
            }
        }
        return false;
    }

    /** What a failed attempt said, for the message of a request given up after retries. */
    private static String detail(Throwable e) {
        StorageException s = storageException(e);
        return (s != null && s.getCode() > 0 ? "HTTP " + s.getCode() + ": " : "") + e.getMessage();
    }

    /** A failure that is not retried (an answer, or a setup error), after retries if there were some. */
    private IOException failure(String what, String key, Throwable e, RetryLoop attempts) {
        String where = what + " of '" + key + "' in " + uri;
        String tries = attempts.attempt() > 1 ? " " + attempts.summary() : "";
        StorageException s = storageException(e);
        if (s != null && (s.getCode() == 401 || s.getCode() == 403)) {
            return new IOException(
                    where + " was refused (" + s.getCode() + " " + s.getReason() + "): check the"
                            + " credentials (Application Default Credentials unless set) and their permissions on"
                            + " bucket '"
                            + bucket + "'",
                    e);
        }
        String status = s != null && s.getCode() > 0 ? "HTTP " + s.getCode() + ": " : "";
        return new IOException(where + " failed" + tries + ": " + status + e.getMessage(), e);
    }

    /** Refuses keys that are no object of a flat namespace (see {@link Keys#addressable}), as reads do. */
    @Override
    public void checkKey(String key) {
        Keys.requireAddressable(key);
    }

    private String name(String key) {
        return prefix + Keys.requireAddressable(key);
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("origin " + uri + " is closed");
        }
    }

    /** Closes the client if this origin made it. Idempotent. */
    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        if (ownsStorage) {
            try {
                storage.close();
            } catch (Exception e) {
                throw new IOException("cannot close the GCS client of " + uri, e);
            }
        }
    }

    @Override
    public String toString() {
        return "GcsOrigin[" + uri + ", maxConcurrency=" + maxConcurrency + "]";
    }

    /**
     * Configures a {@link GcsOrigin}. Every setter validates its argument at once and throws
     * {@link IllegalArgumentException} naming the value and what was expected. Not thread-safe.
     */
    public static final class Builder {
        private static final Pattern BUCKET = Pattern.compile("[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]");

        private String bucket;
        private String prefix = "";
        private String projectId;
        private URI host;
        private Credentials credentials;
        private int maxConcurrency = 64;
        private int maxAttempts = 100;
        private Duration retryBudget = Duration.ofSeconds(15);
        private Duration requestTimeout = Duration.ofSeconds(10);
        private Duration retryBackoff = Duration.ofMillis(50);
        private Storage storage;

        private Builder() {}

        /**
         * Sets the bucket (required).
         *
         * @throws IllegalArgumentException unless 3-222 lowercase letters, digits, {@code .}, {@code -}, {@code _},
         *                                  starting and ending with a letter or digit
         */
        public Builder bucket(String bucket) {
            if (bucket == null || !BUCKET.matcher(bucket).matches()) {
                throw new IllegalArgumentException("bucket: " + quote(bucket) + " (expected: a GCS bucket name,"
                        + " lowercase letters, digits, '.', '-', '_'; not a gs:// URI or a path)");
            }
            this.bucket = bucket;
            return this;
        }

        /**
         * Sets the name prefix keys are relative to, like a directory ({@code "imagenet"} = {@code "imagenet/"}).
         *
         * @throws IllegalArgumentException if it starts with {@code /} or has an empty, {@code .} or {@code ..}
         *                                  segment
         */
        public Builder prefix(String prefix) {
            this.prefix = Keys.directoryPrefix(prefix);
            return this;
        }

        /**
         * Sets the project (for billing of requester-pays buckets and for emulators). Default: from the environment.
         */
        public Builder projectId(String projectId) {
            if (projectId == null || projectId.isBlank()) {
                throw new IllegalArgumentException("project id: " + quote(projectId) + " (expected: a project id)");
            }
            this.projectId = projectId;
            return this;
        }

        /**
         * Sends requests to another host than {@code https://storage.googleapis.com}: an emulator such as
         * fake-gcs-server or the Firebase storage emulator. Without {@link #credentials(Credentials)} an
         * overridden host is used without credentials.
         *
         * @throws IllegalArgumentException unless an http or https URI with a host
         */
        public Builder host(String host) {
            URI parsed;
            try {
                parsed = host == null ? null : new URI(host);
            } catch (URISyntaxException e) {
                parsed = null;
            }
            if (parsed == null
                    || parsed.getScheme() == null
                    || parsed.getHost() == null
                    || !(parsed.getScheme().equals("http") || parsed.getScheme().equals("https"))) {
                throw new IllegalArgumentException("host: " + quote(host) + " (expected: an http or https URI with a"
                        + " host, e.g. http://127.0.0.1:9199)");
            }
            this.host = parsed;
            return this;
        }

        /** Sets the credentials. Default: Application Default Credentials. */
        public Builder credentials(Credentials credentials) {
            if (credentials == null) {
                throw new IllegalArgumentException("credentials: null (expected: Credentials, e.g."
                        + " GoogleCredentials.getApplicationDefault())");
            }
            this.credentials = credentials;
            return this;
        }

        /** Sets how many reads may be in flight at once. Default 64. @throws IllegalArgumentException unless 1..4096 */
        public Builder maxConcurrency(int maxConcurrency) {
            this.maxConcurrency = OriginLimits.maxConcurrency(maxConcurrency);
            return this;
        }

        /**
         * Caps the attempts per request, the first included, on top of the {@link #retryBudget(Duration) retry
         * budget}, which ends retries first with the default of 100.
         *
         * @throws IllegalArgumentException unless 1..100
         */
        public Builder maxAttempts(int maxAttempts) {
            this.maxAttempts = OriginLimits.maxAttempts(maxAttempts);
            return this;
        }

        /**
         * Sets how long one request keeps retrying after failures worth a retry: no attempt starts later than this
         * after the first, and the backoff before the last one is cut to end at it. Default 15 s, enough to ride out
         * a short outage of the store or the network.
         *
         * <p>An attempt under way when the budget ends is bounded by {@link #requestTimeout(Duration)}, so a request
         * can take up to {@code retryBudget + requestTimeout} (25 s by default). Keep that below the cache's
         * {@code TieredCache.Builder.readTimeout} (30 s by default), which bounds how long a reader waits, so that a
         * reader sees the origin's own account of what it waited for. Raise both together to ride out longer outages.
         * {@code Duration.ZERO}: a failure is final after one attempt.
         *
         * @throws IllegalArgumentException if null, negative or over 1 hour
         */
        public Builder retryBudget(Duration budget) {
            this.retryBudget = OriginLimits.retryBudget(budget);
            return this;
        }

        /**
         * Sets the connect and read timeout of each attempt. Default 10 s. @throws IllegalArgumentException unless 1 ms
         * .. 1 h
         */
        public Builder requestTimeout(Duration timeout) {
            this.requestTimeout = OriginLimits.requestTimeout(timeout);
            return this;
        }

        /**
         * Sets the base of the backoff between attempts. Default 50 ms. @throws IllegalArgumentException unless 0 .. 10
         * s
         */
        public Builder retryBackoff(Duration base) {
            this.retryBackoff = OriginLimits.retryBackoff(base);
            return this;
        }

        /**
         * Uses a client the caller built and keeps owning, e.g. one with other transport options or
         * {@code LocalStorageHelper.getOptions().getService()} in tests. Its own retries should be off.
         */
        public Builder storage(Storage storage) {
            if (storage == null) {
                throw new IllegalArgumentException("storage: null (expected: a com.google.cloud.storage.Storage)");
            }
            this.storage = storage;
            return this;
        }

        /**
         * Builds the origin. Makes no request: a missing bucket or refused credentials surface at first use.
         *
         * @throws IllegalStateException if no bucket was set
         */
        public GcsOrigin build() {
            if (bucket == null) {
                throw new IllegalStateException("bucket: not set (expected: GcsOrigin.builder().bucket(\"name\"))");
            }
            if (storage != null) {
                return new GcsOrigin(this, storage, false);
            }
            int timeoutMillis = (int) Math.min(Integer.MAX_VALUE, requestTimeout.toMillis());
            var options = StorageOptions.http()
                    .setRetrySettings(
                            RetrySettings.newBuilder().setMaxAttempts(1).build()) // the origin retries
                    .setTransportOptions(HttpTransportOptions.newBuilder()
                            .setConnectTimeout(timeoutMillis)
                            .setReadTimeout(timeoutMillis)
                            .build());
            if (projectId != null) {
                options.setProjectId(projectId);
            }
            if (host != null) {
                options.setHost(host.toString());
                options.setCredentials(credentials != null ? credentials : NoCredentials.getInstance());
            } else if (credentials != null) {
                options.setCredentials(credentials);
            }
            return new GcsOrigin(this, options.build().getService(), true);
        }

        private static String quote(String s) {
            return s == null ? "null" : "'" + s + "'";
        }
    }
}
