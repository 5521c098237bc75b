// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.s3;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import dev.granary.origin.support.Keys;
import dev.granary.origin.support.OriginLimits;
import dev.granary.origin.support.RetryLoop;
import dev.granary.spi.Origin;
import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.exception.ApiCallAttemptTimeoutException;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.core.sync.ResponseTransformer;
import software.amazon.awssdk.http.AbortableInputStream;
import software.amazon.awssdk.http.SdkHttpClient;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * An origin over an S3 bucket, or a prefix of one: Amazon S3 (general purpose and directory buckets) and S3-compatible
 * stores reached through an endpoint override — MinIO, Ceph RGW, S3Proxy, and the S3 gateways of Alluxio and JuiceFS.
 *
 * <h2>Versions and pinning</h2>
 * An object's version is its ETag, as {@code HEAD} and {@code ListObjectsV2} report it. Every ranged {@code GET} is
 * sent with {@code If-Match: <ETag>}: if the object was overwritten since its version was learned, S3 answers
 * {@code 412 Precondition Failed} and the read fails with {@link ObjectChangedException} — the bytes of two versions
 * are never mixed, not even across the retries of one read. The ETag of every response is checked too, so a store or
 * gateway that ignores {@code If-Match} cannot slip another version's bytes through either.
 *
 * <h2>Retries and timeouts</h2>
 * The origin retries by itself (the SDK's own retries are off, so every attempt is counted in {@link #retries()}):
 * throttling ({@code 503 SlowDown}, {@code 429}), server errors ({@code 5xx}), connection resets, refused connections
 * and timeouts, for up to {@link Builder#retryBudget(Duration)} (default 15 s) and at most
 * {@link Builder#maxAttempts(int)} attempts, sleeping between attempts an exponential backoff with full jitter (base
 * {@link Builder#retryBackoff(Duration)}, four times that for throttling, at most 5 s), through the shared
 * {@link RetryLoop}. So by default a store that restarts, or a network that drops for a few seconds, costs a training
 * run a pause, not failed batches. A request given up says what it waited for:
 * {@code "GET of 'k' in s3://b/p/ failed after 9 attempts over 12.3 s: <last failure>"}. A data read that fails after
 * some of its bytes arrived resumes from the first missing byte — still pinned to the same ETag. Every wait of an
 * attempt is bounded by
 * {@link Builder#requestTimeout(Duration)}: connecting, waiting for the response, and every wait for more body bytes.
 * Missing objects ({@code 404}), changed
 * ones ({@code 412}), ranges past the end ({@code 416}) and access errors ({@code 403}) are not retried.
 *
 * <h2>The request path</h2>
 * {@code HEAD}, {@code ListObjectsV2} and {@code PutObject} go through the SDK's {@link S3Client}. A ranged
 * {@code GET} — the one request a cold epoch repeats for every page — takes a direct path when the origin makes its own
 * client (decision 0012): the origin builds the request, signs it with the SDK's SigV4 signer and sends it through the
 * same Apache HTTP client, without the S3 client's pipeline (interceptors, endpoint and auth-scheme resolution,
 * marshalling), which was ~80 % of the CPU of a cold fill. The response must be exactly the data asked for — status
 * {@code 206}, the {@code Content-Range} and {@code Content-Length} of the range, the version's ETag, the whole body
 * — or the request is sent again through the {@link S3Client}, which maps the answer ({@code 404}, {@code 412},
 * {@code 403}, ...) and retries faults as below, so every error reads the same on both paths. See
 * {@link Builder#directGet(boolean)}, {@link #directReads()}, {@link #directFallbacks()}.
 *
 * <h2>Listing</h2>
 * {@link #list(String)} pages through {@code ListObjectsV2} lazily (one page of at most 1 000 keys in memory at a
 * time), in S3's order, which is ascending UTF-8 byte order. Folder markers (keys ending in {@code /}) and keys that
 * the cache cannot address (a {@code ..} segment, a leading {@code /}) are skipped.
 *
 * <h2>Threads</h2>
 * Thread-safe. Calls block; the cache runs them on its fill threads. The SDK's synchronous HTTP client is sized to
 * {@link #maxConcurrency()} connections (plus a few for metadata), so every in-flight read has a connection of its
 * own. Interrupting a thread blocked in a call aborts it with an {@link InterruptedIOException}.
 *
 * <p>Build one with {@link #builder()}; closing it closes the SDK client it made (a client passed in through
 * {@link Builder#client(S3Client)} stays the caller's).
 */
public final class S3Origin implements Origin {

    private static final int METADATA_CONNECTIONS = 16;
    private static final System.Logger LOG = System.getLogger(S3Origin.class.getName());

    private final S3Client s3;
    private final boolean ownsClient;
    /** The HTTP client of an S3 client this origin made (closed with it), or null. */
    private final SdkHttpClient http;
    /** The ranged GET without the S3 client's pipeline (decision 0012), or null where it does not apply. */
    private final DirectGet direct;

    private final LongAdder directReads = new LongAdder();
    private final LongAdder directFallbacks = new LongAdder();
    private final String bucket;
    private final String prefix;
    private final URI uri;
    private final int maxConcurrency;
    private final boolean ifMatch;
    private final RetryLoop.Policy retry;
    private final LongAdder retries = new LongAdder();
    /**
     * Transfer buffers between the response stream and the destination memory, reused: a fresh 64 KiB array per read
     * (allocated outside the TLAB and zeroed) was 14 % of the origin's CPU in a cold loader epoch (JFR).
     */
    private final ArrayBlockingQueue<byte[]> chunks;

    private static final int CHUNK = 64 * 1024;
    /** Set once any request proved the bucket exists: from then on a {@code 404} on HEAD means a missing key. */
    private volatile boolean bucketSeen;

    private volatile boolean closed;

    private S3Origin(Builder b, S3Client s3, boolean ownsClient, SdkHttpClient http, DirectGet direct) {
        this.s3 = s3;
        this.ownsClient = ownsClient;
        this.http = http;
        this.direct = direct;
        this.bucket = b.bucket;
        this.prefix = b.prefix;
        this.uri = URI.create("s3://" + b.bucket + "/" + b.prefix);
        this.maxConcurrency = b.maxConcurrency;
        this.chunks = new ArrayBlockingQueue<>(b.maxConcurrency);
        this.ifMatch = b.ifMatch;
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

    /** {@return the key prefix every key is relative to: empty, or ending in {@code /}} */
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

    /**
     * {@return whether ranged GETs go the direct path} (decision 0012): signed by this origin with the SDK's SigV4
     * signer and sent through the HTTP client of the S3 client it made, without the S3 client's request pipeline.
     * True unless the origin was given a client ({@link Builder#client(S3Client)}), the bucket is a directory bucket
     * or an access point alias that needs the SDK's own handling, or the direct path was turned off
     * ({@link Builder#directGet(boolean)}, system property {@code granary.s3.directGet}).
     */
    public boolean directGet() {
        return direct != null;
    }

    /** {@return how many ranged GETs the direct path completed} (each one checked: status, range, length, ETag) */
    public long directReads() {
        return directReads.sum();
    }

    /**
     * {@return how many ranged GETs the direct path handed to the S3 client}: an answer that was not the data asked
     * for (missing object, changed version, refused credentials, ...), or a fault (throttling, a server error, a
     * broken connection), each then sent again, and mapped, through the S3 client
     */
    public long directFallbacks() {
        return directFallbacks.sum();
    }

    // ---------------------------------------------------------------------------------------------------- stat

    @Override
    public ObjectInfo stat(String key) throws IOException {
        String s3Key = s3Key(key);
        try {
            HeadObjectResponse head =
                    call("HEAD", key, () -> s3.headObject(r -> r.bucket(bucket).key(s3Key)));
            bucketSeen = true;
            return new ObjectInfo(key, head.contentLength(), requireEtag(key, head.eTag()));
        } catch (S3Exception e) {
            if (e.statusCode() == 404) {
                throw missing(key, e);
            }
            throw failure("HEAD", key, e);
        }
    }

    // ---------------------------------------------------------------------------------------------------- read

    @Override
    public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
        Objects.requireNonNull(object, "object");
        Objects.requireNonNull(dst, "dst");
        long length = dst.byteSize();
        OriginLimits.checkRead(uri, object, position, length);
        if (length == 0) {
            return; // an HTTP range cannot be empty; nothing to pin either
        }
        String s3Key = s3Key(object.key());
        long done = 0; // bytes already in dst: a retry resumes after them, pinned to the same ETag
        RetryLoop attempts = retry.start("GET", object.key(), uri, retries);
        if (direct != null) {
            checkOpen();
            DirectGet.Attempt first = directAttempt(object, s3Key, position, dst);
            done = first.done;
            switch (first.outcome) {
                case DONE -> {
                    bucketSeen = true;
                    directReads.increment();
                    return;
                }
                case ANSWER -> directFallbacks.increment(); // the S3 client asks again at once, and maps the answer
                case FAULT -> {
                    directFallbacks.increment();
                    if (first.failure != null && OriginLimits.isInterruption(first.failure)) {
                        throw attempts.interrupted(first.failure);
                    }
                    // A counted attempt like any other; when it was the last one allowed, the S3 client's attempt
                    // follows at once instead, so that a request given up always ends with the S3 client's account.
                    if (attempts.attempt() < retry.maxAttempts()
                            && attempts.elapsed().compareTo(retry.budget()) < 0) {
                        attempts.backOff(first.detail, first.failure, first.throttled);
                    }
                }
            }
        }
        while (true) {
            checkOpen();
            long from = position + done;
            String range = "bytes=" + from + "-" + (position + length - 1);
            GetObjectRequest.Builder get =
                    GetObjectRequest.builder().bucket(bucket).key(s3Key).range(range);
            if (ifMatch) {
                get.ifMatch(object.version());
            }
            GetObjectRequest request = get.build();
            Transfer transfer = new Transfer(object, dst, length, done, range);
            boolean throttling = false;
            Exception failed;
            String detail;
            try {
                try {
                    s3.getObject(request, transfer);
                } finally {
                    done = transfer.done; // the bytes that reached dst stay, even if the SDK failed after them
                }
                bucketSeen = true;
                if (transfer.failure instanceof IOException io) {
                    throw io;
                }
                if (transfer.failure instanceof RuntimeException re) {
                    throw re;
                }
                return;
            } catch (S3Exception e) {
                switch (e.statusCode()) {
                    case 412 -> throw new ObjectChangedException(uri, object.key(), object.version(), null, e);
                    case 404 -> throw missing(object.key(), e);
                    case 416 ->
                        throw (EOFException) new EOFException("read of '" + object.key() + "' in " + uri + " at " + from
                                        + " is past the end of the object (416 from S3)")
                                .initCause(e);
                    default -> {
                        if (!retryable(e)) {
                            throw failure("GET", object.key(), e, attempts);
                        }
                        throttling = throttled(e);
                        failed = e;
                        detail = detail(e);
                    }
                }
            } catch (SdkClientException e) {
                if (OriginLimits.isInterruption(e)) {
                    throw attempts.interrupted(e);
                }
                if (!retryable(e)) {
                    throw failure("GET", object.key(), e, attempts);
                }
                failed = e;
                detail = detail(e);
            } catch (ProtocolException | ObjectChangedException e) { // answers, not faults: not retried
                throw e;
            } catch (IOException e) { // the body broke off: a reset, a timeout between bytes, a server gone
                if (OriginLimits.isInterruption(e)) {
                    throw attempts.interrupted(e);
                }
                failed = e;
                detail = done + " of " + length + " bytes received: " + e;
            }
            attempts.backOff(detail, failed, throttling);
        }
    }

    /** The first attempt of a read, through {@link DirectGet}, with a pooled transfer buffer. */
    private DirectGet.Attempt directAttempt(ObjectInfo object, String s3Key, long position, MemorySegment dst) {
        byte[] chunk = chunks.poll();
        if (chunk == null) {
            chunk = new byte[CHUNK];
        }
        try {
            return direct.get(
                    s3Key,
                    position,
                    position + dst.byteSize() - 1,
                    object.size(),
                    ifMatch ? object.version() : null,
                    object.version(),
                    dst,
                    0,
                    chunk);
        } finally {
            chunks.offer(chunk); // bounded: a full pool drops it
        }
    }

    /**
     * One attempt's body, read inside the SDK call straight into the destination: no {@code ResponseInputStream}
     * (which arms and cancels a timer task per response on the SDK's scheduler thread: per-request CPU the read
     * does not need, as the socket timeout bounds every wait). Checks the served version and length first. Any
     * failure is kept in {@link #failure}, not thrown through the SDK (which would wrap it), and aborts the body so a
     * broken connection is not drained for reuse; {@link #done} says how far the bytes got, for a resumed retry.
     * Used by one thread, once.
     */
    private final class Transfer implements ResponseTransformer<GetObjectResponse, Void> {
        private final ObjectInfo object;
        private final MemorySegment dst;
        private final long length;
        private final String range;
        long done;
        /** An {@link IOException} or a {@link RuntimeException}, as the read loop threw it. */
        Exception failure;

        Transfer(ObjectInfo object, MemorySegment dst, long length, long done, String range) {
            this.object = object;
            this.dst = dst;
            this.length = length;
            this.done = done;
            this.range = range;
        }

        @Override
        public Void transform(GetObjectResponse response, AbortableInputStream body) {
            boolean complete = false;
            try {
                check(response);
                byte[] chunk = chunks.poll();
                if (chunk == null) {
                    chunk = new byte[CHUNK];
                }
                try {
                    while (done < length) { // done advances per chunk: a break resumes after the last byte kept
                        int n = body.read(chunk, 0, (int) Math.min(CHUNK, length - done));
                        if (n < 0) {
                            break;
                        }
                        MemorySegment.copy(chunk, 0, dst, ValueLayout.JAVA_BYTE, done, n);
                        done += n;
                    }
                } finally {
                    chunks.offer(chunk); // bounded: a full pool drops it
                }
                if (done != length) {
                    throw new IOException("GET of '" + object.key() + "' in " + uri + " ended after " + done + " of "
                            + length + " bytes");
                }
                if (body.read() != -1) {
                    throw new ProtocolException("GET of '" + object.key() + "' in " + uri + " sent more than the "
                            + length + " bytes asked for");
                }
                complete = true;
            } catch (IOException | RuntimeException e) {
                failure = e;
            } finally {
                if (!complete) {
                    body.abort(); // don't drain a broken body to reuse its connection
                }
            }
            return null;
        }

        private void check(GetObjectResponse response) throws IOException {
            long expected = length - done;
            String served = response.eTag();
            if (served == null && !ifMatch) {
                throw new ProtocolException("GET of '" + object.key() + "' in " + uri + " returned no ETag, so"
                        + " the version it served cannot be checked; build the origin with ifMatch(true)");
            }
            if (served != null && !served.equals(object.version())) {
                // A store that ignored If-Match served another version: refuse its bytes all the same.
                throw new ObjectChangedException(uri, object.key(), object.version(), served);
            }
            Long contentLength = response.contentLength();
            if (contentLength != null && contentLength != expected) {
                throw new ProtocolException("GET of '" + object.key() + "' in " + uri + " " + range + " answered "
                        + contentLength + " bytes (expected: " + expected + ")");
            }
        }
    }

    /** A server answer that breaks the HTTP contract of a ranged GET: not retried. */
    private static final class ProtocolException extends IOException {
        private static final long serialVersionUID = 1L;

        ProtocolException(String message) {
            super(message);
        }
    }

    // ---------------------------------------------------------------------------------------------------- write

    /**
     * Uploads an object whole with one {@code PutObject} (atomic in S3: readers see the old object or the new one),
     * with the origin's retries.
     *
     * @return the key, size and the ETag S3 answered (a {@code HEAD} if the answer had none)
     */
    @Override
    public ObjectInfo write(String key, byte[] bytes) throws IOException {
        if (bytes == null) {
            throw new IllegalArgumentException("bytes of '" + key + "': null (expected: the object's bytes)");
        }
        String s3Key = s3Key(key);
        PutObjectResponse response;
        try {
            response = call(
                    "PUT",
                    key,
                    () -> s3.putObject(
                            r -> r.bucket(bucket).key(s3Key).contentLength((long) bytes.length),
                            RequestBody.fromBytes(bytes)));
        } catch (S3Exception e) {
            if ("NoSuchBucket"
                    .equals(
                            e.awsErrorDetails() == null
                                    ? null
                                    : e.awsErrorDetails().errorCode())) {
                throw noSuchBucket(e);
            }
            throw failure("PUT", key, e);
        }
        bucketSeen = true;
        String etag = response.eTag();
        return etag == null || etag.isEmpty() ? stat(key) : new ObjectInfo(key, bytes.length, etag);
    }

    // ---------------------------------------------------------------------------------------------------- list

    @Override
    public Stream<ObjectInfo> list(String listPrefix) throws IOException {
        Objects.requireNonNull(listPrefix, "prefix");
        checkOpen();
        Listing listing = new Listing(listPrefix);
        listing.fetch(); // the first page now: a missing bucket or bad credentials fail here, as IOException
        return StreamSupport.stream(
                Spliterators.spliteratorUnknownSize(
                        listing, Spliterator.ORDERED | Spliterator.DISTINCT | Spliterator.NONNULL),
                false);
    }

    /** Pages through ListObjectsV2 one page at a time, each page fetched with the origin's retries. */
    private final class Listing implements Iterator<ObjectInfo> {
        private final String listPrefix;
        private final ArrayDeque<ObjectInfo> page = new ArrayDeque<>();
        private String continuation;
        private boolean last;

        Listing(String listPrefix) {
            this.listPrefix = listPrefix;
        }

        void fetch() throws IOException {
            String token = continuation;
            ListObjectsV2Response response;
            try {
                response = call(
                        "LIST",
                        listPrefix,
                        () -> s3.listObjectsV2(r ->
                                r.bucket(bucket).prefix(prefix + listPrefix).continuationToken(token)));
            } catch (S3Exception e) {
                throw failure("LIST", listPrefix, e);
            }
            bucketSeen = true;
            for (S3Object o : response.contents()) {
                String key = o.key().substring(prefix.length());
                if (Keys.addressable(key) && o.eTag() != null) {
                    page.add(new ObjectInfo(key, o.size(), o.eTag()));
                }
            }
            continuation = response.nextContinuationToken();
            last = !Boolean.TRUE.equals(response.isTruncated()) || continuation == null;
        }

        @Override
        public boolean hasNext() {
            while (page.isEmpty() && !last) {
                try {
                    fetch();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
            return !page.isEmpty();
        }

        @Override
        public ObjectInfo next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            return page.poll();
        }
    }

    // ---------------------------------------------------------------------------------------------------- calls

    @FunctionalInterface
    private interface Call<T> {
        T run();
    }

    /**
     * Runs a non-streaming request with the origin's retries; returns its result or throws the last failure:
     * {@link S3Exception} for an answer that is not retried (the caller maps it), {@link IOException} otherwise.
     */
    private <T> T call(String what, String key, Call<T> call) throws IOException {
        RetryLoop attempts = retry.start(what, key, uri, retries);
        while (true) {
            checkOpen();
            try {
                return call.run();
            } catch (S3Exception e) {
                if (!retryable(e)) {
                    throw e;
                }
                attempts.backOff(detail(e), e, throttled(e));
            } catch (SdkClientException e) {
                if (OriginLimits.isInterruption(e)) {
                    throw attempts.interrupted(e);
                }
                if (!retryable(e)) {
                    throw failure(what, key, e, attempts);
                }
                attempts.backOff(detail(e), e, false);
            }
        }
    }

    static boolean retryable(S3Exception e) {
        int status = e.statusCode();
        String code = e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorCode();
        return status >= 500
                || status == 429
                || status == 408
                || "SlowDown".equals(code)
                || "RequestTimeout".equals(code)
                || "InternalError".equals(code);
    }

    /** A client-side failure is worth another attempt if the network failed (I/O, a timeout), not the setup. */
    static boolean retryable(SdkClientException e) {
        if (e instanceof ApiCallAttemptTimeoutException) {
            return true;
        }
        for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
            if (t instanceof IOException) {
                return true;
            }
        }
        return false;
    }

    private static boolean throttled(S3Exception e) {
        String code = e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorCode();
        return e.statusCode() == 503 || e.statusCode() == 429 || "SlowDown".equals(code);
    }

    /** A missing key, or — a {@code 404} before any request reached the bucket — possibly a missing bucket. */
    private IOException missing(String key, S3Exception e) throws IOException {
        String code = e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorCode();
        if ("NoSuchBucket".equals(code)) {
            throw noSuchBucket(e);
        }
        if (!bucketSeen) {
            try {
                call("HEAD bucket", "", () -> s3.headBucket(r -> r.bucket(bucket)));
                bucketSeen = true;
            } catch (S3Exception bucketError) {
                if (bucketError.statusCode() == 404) {
                    throw noSuchBucket(bucketError);
                }
                // 403 and the like: the bucket exists but we may not ask about it; the key is what is missing
            }
        }
        return new NoSuchObjectException(uri, key, e);
    }

    private IOException noSuchBucket(Throwable cause) {
        return new IOException(
                "no such bucket: '" + bucket + "' (origin " + uri + "); check the bucket name"
                        + " and, for an S3-compatible store, the endpoint",
                cause);
    }

    /** What a failed attempt said, for the message of a request given up after retries. */
    private static String detail(SdkException e) {
        if (e instanceof S3Exception s3e) {
            String code =
                    s3e.awsErrorDetails() == null ? null : s3e.awsErrorDetails().errorCode();
            return "HTTP " + s3e.statusCode() + (code == null ? "" : " " + code) + ": " + s3e.getMessage();
        }
        return e.getMessage();
    }

    private IOException failure(String what, String key, SdkException e) {
        return failure(what, key, e, null);
    }

    /** A failure that is not retried (an answer, or a setup error), after {@code attempts} if there were retries. */
    private IOException failure(String what, String key, SdkException e, RetryLoop attempts) {
        String where = what + " of '" + key + "' in " + uri;
        String tries = attempts != null && attempts.attempt() > 1 ? " " + attempts.summary() : "";
        if (e instanceof S3Exception s3e) {
            String code =
                    s3e.awsErrorDetails() == null ? null : s3e.awsErrorDetails().errorCode();
            if ("NoSuchBucket".equals(code) || (what.equals("LIST") && s3e.statusCode() == 404)) {
                return noSuchBucket(e);
            }
            if (s3e.statusCode() == 403) {
                return new IOException(
                        where + " was refused (403" + (code == null ? "" : " " + code) + "): check"
                                + " the credentials (access key, secret, session token), their permissions on bucket '"
                                + bucket + "', and the region",
                        e);
            }
            if (s3e.statusCode() == 301 || "PermanentRedirect".equals(code)) {
                return new IOException(
                        where + " failed: bucket '" + bucket + "' is in another region than the"
                                + " one configured (301 PermanentRedirect); set S3Origin.builder().region(...)",
                        e);
            }
            return new IOException(
                    where + " failed" + tries + ": HTTP " + s3e.statusCode() + (code == null ? "" : " " + code) + ": "
                            + s3e.getMessage(),
                    e);
        }
        return new IOException(where + " failed" + tries + ": " + e.getMessage(), e);
    }

    private static String requireEtag(String key, String etag) throws IOException {
        if (etag == null || etag.isEmpty()) {
            throw new IOException("HEAD of '" + key + "' returned no ETag: cannot pin reads to a version");
        }
        return etag;
    }

    /** Refuses keys that are no object of a flat namespace (see {@link Keys#addressable}), as reads do. */
    @Override
    public void checkKey(String key) {
        Keys.requireAddressable(key);
    }

    private String s3Key(String key) {
        return prefix + Keys.requireAddressable(key);
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("origin " + uri + " is closed");
        }
    }

    /** Closes the SDK client if this origin made it. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (ownsClient) {
            s3.close();
        }
        if (http != null) {
            http.close(); // passed to the S3 client ready-made, so it is ours to close
        }
    }

    @Override
    public String toString() {
        return "S3Origin[" + uri + ", maxConcurrency=" + maxConcurrency + (direct != null ? ", direct GET" : "") + "]";
    }

    // ---------------------------------------------------------------------------------------------------- builder

    /**
     * Configures an {@link S3Origin}. Every setter validates its argument at once and throws
     * {@link IllegalArgumentException} naming the value and what was expected. Not thread-safe.
     *
     * <p>Directory buckets (S3 Express One Zone) work through the SDK's own support: give the full bucket name
     * ({@code name--usw2-az1--x-s3}) and its region, leave {@link #endpoint(URI)} and {@link #pathStyle(boolean)}
     * unset (directory buckets use virtual-hosted zonal endpoints the SDK derives from the name), and use
     * credentials allowed {@code s3express:CreateSession} on the bucket; the SDK creates and refreshes the session
     * credentials itself. See {@code docs/origins.md}.
     */
    public static final class Builder {
        private static final Pattern BUCKET = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{1,253}[A-Za-z0-9]");
        private static final Pattern REGION = Pattern.compile("[a-z0-9][a-z0-9-]*[a-z0-9]");

        private String bucket;
        private String prefix = "";
        private String region;
        private URI endpoint;
        private boolean pathStyle;
        private AwsCredentialsProvider credentials;
        private int maxConcurrency = 64;
        private int maxAttempts = 100;
        private Duration retryBudget = Duration.ofSeconds(15);
        private Duration requestTimeout = Duration.ofSeconds(10);
        private Duration retryBackoff = Duration.ofMillis(50);
        private S3Client client;
        private boolean ifMatch = true;
        private boolean directGet = true;

        private Builder() {}

        /**
         * Whether ranged GETs carry {@code If-Match: <ETag>} (default true). Either way the ETag of every response is
         * checked against the version asked for, so no setting lets another version's bytes through; with
         * {@code If-Match} the store refuses a changed object before sending it, without it the origin refuses the
         * bytes after they came (a wasted transfer, rare). Turn it off only for a store or gateway that mishandles
         * conditional reads (refuses them, or answers them slowly) and returns ETags on ranged GETs; on AWS S3 keep
         * the default.
         */
        public Builder ifMatch(boolean ifMatch) {
            this.ifMatch = ifMatch;
            return this;
        }

        /**
         * Whether ranged GETs take the direct path (default true; decision 0012): the origin signs them itself with the
         * SDK's SigV4 signer ({@code AwsV4HttpSigner}) and sends them through the HTTP client of its S3 client,
         * without the S3 client's request pipeline (interceptors, endpoint and auth-scheme resolution, request
         * marshalling, response unmarshalling), which is most of the CPU of a cold read. Every other request (HEAD,
         * LIST, PUT), and every ranged GET the direct path does not complete with the data asked for — an error
         * answer, a fault, a response whose ETag, range or length differs — goes through the S3 client, which maps
         * errors and retries as it always did. It applies only when the origin makes its own client (not with
         * {@link #client(S3Client)}) and the bucket is not a directory bucket ({@code --x-s3}) or an Object Lambda
         * or multi-region access point alias ({@code --ol-s3}, {@code .mrap}). {@code false} sends every GET
         * through the S3 client. The system property {@code granary.s3.directGet=false} (read at
         * {@link #build()}) turns it off for every origin built meanwhile, whatever is set here.
         */
        public Builder directGet(boolean directGet) {
            this.directGet = directGet;
            return this;
        }

        /**
         * Sets the bucket (required).
         *
         * @throws IllegalArgumentException if it is not a bucket name: 3 to 255 letters, digits, {@code .},
         *                                  {@code -} or {@code _}, starting and ending with a letter or digit
         */
        public Builder bucket(String bucket) {
            if (bucket == null || !BUCKET.matcher(bucket).matches()) {
                throw new IllegalArgumentException("bucket: " + quote(bucket) + " (expected: a bucket name, 3-255"
                        + " letters, digits, '.', '-' or '_', starting and ending with a letter or digit;"
                        + " not an s3:// URI or a path)");
            }
            this.bucket = bucket;
            return this;
        }

        /**
         * Sets the key prefix that keys are relative to, like a directory: {@code "imagenet"} and
         * {@code "imagenet/"} both make key {@code train/1.jpg} the S3 key {@code imagenet/train/1.jpg}.
         * Default: empty (the whole bucket).
         *
         * @throws IllegalArgumentException if it starts with {@code /} or has a {@code ..} or empty segment
         */
        public Builder prefix(String prefix) {
            this.prefix = Keys.directoryPrefix(prefix);
            return this;
        }

        /**
         * Sets the region, e.g. {@code us-east-1}. Default: the SDK's region provider chain ({@code AWS_REGION},
         * {@code ~/.aws/config}, instance metadata), or {@code us-east-1} when an {@link #endpoint(URI)} is set.
         *
         * @throws IllegalArgumentException if it is not a region name
         */
        public Builder region(String region) {
            if (region == null || !REGION.matcher(region).matches()) {
                throw new IllegalArgumentException(
                        "region: " + quote(region) + " (expected: a region name such as 'us-east-1')");
            }
            this.region = region;
            return this;
        }

        /**
         * Sends requests to another endpoint than AWS's: MinIO, Ceph RGW, S3Proxy, an Alluxio or JuiceFS S3 gateway.
         *
         * @throws IllegalArgumentException unless it is an absolute {@code http} or {@code https} URI with a host and
         *                                  no query or fragment
         */
        public Builder endpoint(URI endpoint) {
            if (endpoint == null
                    || endpoint.getScheme() == null
                    || !(endpoint.getScheme().equalsIgnoreCase("http")
                            || endpoint.getScheme().equalsIgnoreCase("https"))
                    || endpoint.getHost() == null
                    || endpoint.getQuery() != null
                    || endpoint.getFragment() != null) {
                throw new IllegalArgumentException("endpoint: " + endpoint + " (expected: an http or https URI with a"
                        + " host, e.g. http://127.0.0.1:9000)");
            }
            this.endpoint = endpoint;
            return this;
        }

        /** Addresses the bucket in the path ({@code http://host/bucket/key}) rather than the host name; most
         * S3-compatible stores need it. Default: false. */
        public Builder pathStyle(boolean pathStyle) {
            this.pathStyle = pathStyle;
            return this;
        }

        /**
         * Sets the credentials. Default: the SDK's default chain (environment, system properties, profiles, web
         * identity, container and instance credentials).
         *
         * @throws IllegalArgumentException if null
         */
        public Builder credentials(AwsCredentialsProvider credentials) {
            if (credentials == null) {
                throw new IllegalArgumentException("credentials: null (expected: an AwsCredentialsProvider, e.g."
                        + " StaticCredentialsProvider.create(AwsBasicCredentials.create(id, secret)))");
            }
            this.credentials = credentials;
            return this;
        }

        /**
         * Sets how many ranged GETs the cache may have in flight at once; the HTTP connection pool is sized to match.
         * Default 64.
         *
         * @throws IllegalArgumentException if {@code < 1} or {@code > 4096}
         */
        public Builder maxConcurrency(int maxConcurrency) {
            this.maxConcurrency = OriginLimits.maxConcurrency(maxConcurrency);
            return this;
        }

        /**
         * Caps how many attempts one request gets in all, the first included, on top of the
         * {@link #retryBudget(Duration) retry budget}, which ends retries first with the default of 100.
         *
         * @throws IllegalArgumentException if {@code < 1} or {@code > 100}
         */
        public Builder maxAttempts(int maxAttempts) {
            this.maxAttempts = OriginLimits.maxAttempts(maxAttempts);
            return this;
        }

        /**
         * Sets how long one request keeps retrying after failures worth a retry (see the class comment): no attempt
         * starts later than this after the first, and the backoff before the last one is cut to end at it. Default
         * 15 s, enough to ride out a store's restart or a short network outage.
         *
         * <p>An attempt under way when the budget ends is bounded by {@link #requestTimeout(Duration)}, so a request
         * can take up to {@code retryBudget + requestTimeout} (25 s by default). Keep that below the cache's
         * {@code TieredCache.Builder.readTimeout} (30 s by default), which bounds how long a reader waits: then a
         * reader sees the origin's own account of what it waited for, rather than the cache's timeout. Raise both
         * together to ride out longer outages. {@code Duration.ZERO}: a failure is final after one attempt.
         *
         * @throws IllegalArgumentException if null, negative or over 1 hour
         */
        public Builder retryBudget(Duration budget) {
            this.retryBudget = OriginLimits.retryBudget(budget);
            return this;
        }

        /**
         * Bounds every wait of an attempt: the connect, the wait for the response head, each wait for more body bytes
         * (the HTTP client's connect and socket timeouts), and the wait for a pooled connection. Default 10 s.
         *
         * @throws IllegalArgumentException unless between 1 ms and 1 hour
         */
        public Builder requestTimeout(Duration timeout) {
            this.requestTimeout = OriginLimits.requestTimeout(timeout);
            return this;
        }

        /**
         * Sets the base of the exponential backoff between attempts (four times it after throttling). Default 50 ms.
         *
         * @throws IllegalArgumentException unless between 0 and 10 s
         */
        public Builder retryBackoff(Duration base) {
            this.retryBackoff = OriginLimits.retryBackoff(base);
            return this;
        }

        /**
         * Uses a client the caller built and keeps owning (it is not closed with the origin) instead of making one.
         * Its own retries should be off ({@code AwsRetryStrategy.doNotRetry()}), since the origin retries; region,
         * endpoint, path style, credentials and the timeouts set here are then the client's business.
         *
         * @throws IllegalArgumentException if null
         */
        public Builder client(S3Client client) {
            if (client == null) {
                throw new IllegalArgumentException("client: null (expected: an S3Client)");
            }
            this.client = client;
            return this;
        }

        /**
         * Builds the origin. Makes no request: a missing bucket or wrong credentials surface at first use, as an
         * {@link IOException} that names them.
         *
         * @throws IllegalStateException    if no bucket was set, or no region was set and none can be found
         * @throws IllegalArgumentException if the system property {@code granary.s3.directGet} is set to anything
         *                                  but {@code true} or {@code false}
         */
        public S3Origin build() {
            if (bucket == null) {
                throw new IllegalStateException("bucket: not set (expected: S3Origin.builder().bucket(\"name\"))");
            }
            boolean direct = directGet && directGetProperty();
            if (client != null) {
                return new S3Origin(this, client, false, null, null);
            }
            Region resolved = resolveRegion();
            AwsCredentialsProvider provider = credentials != null
                    ? credentials
                    : DefaultCredentialsProvider.builder().build();
            // ApacheHttpClient is deprecated in this SDK version; it is the client decision 0004 chose and measured.
            @SuppressWarnings("deprecation")
            SdkHttpClient http = ApacheHttpClient.builder()
                    .maxConnections(maxConcurrency + METADATA_CONNECTIONS)
                    .connectionTimeout(requestTimeout)
                    .socketTimeout(requestTimeout)
                    .connectionAcquisitionTimeout(requestTimeout)
                    .tcpKeepAlive(true)
                    .build();
            S3Client s3;
            try {
                s3 = makeClient(resolved, provider, http);
            } catch (RuntimeException e) {
                http.close();
                throw e;
            }
            DirectGet fast = null;
            if (direct && DirectGet.notApplicable(bucket) == null) {
                try {
                    fast = DirectGet.create(s3, http, provider, resolved, bucket);
                } catch (RuntimeException e) { // an endpoint setup the direct path does not know: the S3 client's
                    LOG.log(
                            System.Logger.Level.WARNING,
                            "S3 origin over bucket '" + bucket + "': ranged GETs go"
                                    + " through the S3 client, the direct path does not apply: " + e);
                }
            }
            return new S3Origin(this, s3, true, http, fast);
        }

        /** {@return false if the system property turns the direct GET off} */
        private static boolean directGetProperty() {
            String value = System.getProperty(DirectGet.PROPERTY);
            if (value == null || value.equals("true")) {
                return true;
            }
            if (value.equals("false")) {
                return false;
            }
            throw new IllegalArgumentException(
                    "system property " + DirectGet.PROPERTY + ": '" + value + "' (expected: true or false)");
        }

        private S3Client makeClient(Region resolved, AwsCredentialsProvider provider, SdkHttpClient http) {
            var builder = S3Client.builder()
                    .region(resolved)
                    .httpClient(http) // shared with the direct GET (decision 0012); closed by the origin
                    .forcePathStyle(pathStyle)
                    // S3-compatible stores often lack the newer flexible checksums; a ranged GET has none anyway.
                    .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                    .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                    // The origin retries, and counts. No apiCallAttemptTimeout: the connect and socket timeouts
                    // bound every wait already, and the SDK's per-attempt timer cost 12 % of cold throughput
                    // (decision 0004).
                    .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()));
            builder.credentialsProvider(provider);
            if (endpoint != null) {
                builder.endpointOverride(endpoint);
            }
            return builder.build();
        }

        private Region resolveRegion() {
            if (region != null) {
                return Region.of(region);
            }
            if (endpoint != null) {
                return Region.US_EAST_1; // S3-compatible stores ignore it, but SigV4 needs one
            }
            try {
                return new DefaultAwsRegionProviderChain().getRegion();
            } catch (SdkClientException e) {
                throw new IllegalStateException(
                        "region: not set and none found (AWS_REGION, aws.region,"
                                + " ~/.aws/config, instance metadata) (expected:"
                                + " S3Origin.builder().region(\"us-east-1\"))",
                        e);
            }
        }

        private static String quote(String s) {
            return s == null ? "null" : "'" + s + "'";
        }
    }
}
