// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.s3;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URL;
import java.util.Optional;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.http.AbortableInputStream;
import software.amazon.awssdk.http.ExecutableHttpRequest;
import software.amazon.awssdk.http.HttpExecuteRequest;
import software.amazon.awssdk.http.HttpExecuteResponse;
import software.amazon.awssdk.http.SdkHttpClient;
import software.amazon.awssdk.http.SdkHttpMethod;
import software.amazon.awssdk.http.SdkHttpRequest;
import software.amazon.awssdk.http.SdkHttpResponse;
import software.amazon.awssdk.http.auth.aws.signer.AwsV4HttpSigner;
import software.amazon.awssdk.http.auth.spi.signer.SignedRequest;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.utils.http.SdkHttpUtils;

/**
 * The ranged {@code GET} of {@link S3Origin} without the S3 client's request pipeline (decision 0012): the request is
 * built here, signed with the SDK's own SigV4 signer ({@link AwsV4HttpSigner}) and sent through the same
 * {@link SdkHttpClient} (Apache) the origin's {@link S3Client} uses; the body goes straight into the destination
 * memory. Only a success that passes every check counts: anything else — an answer that is not {@code 206} (or a
 * {@code 200} carrying exactly the whole object), a missing or different ETag, a {@code Content-Range} or
 * {@code Content-Length} other than the one asked for, an I/O error, a body that is short or too long — is reported to
 * the caller, which sends the request again through the {@link S3Client}, so that error mapping, retries and their
 * messages stay in one place.
 *
 * <p>Thread-safe: immutable; each {@link #get} call is one request on the calling thread.
 */
final class DirectGet {

    /** System property that turns the direct path off for every origin built while it is {@code false}. */
    static final String PROPERTY = "granary.s3.directGet";

    private static final String PROBE_KEY = "granary-probe";

    private final SdkHttpClient http;
    private final AwsCredentialsProvider credentials;
    private final AwsV4HttpSigner signer = AwsV4HttpSigner.create();
    private final String region;
    private final String protocol;
    private final String host;
    private final int port;
    /** The request's {@code Host} header: the host, and the port unless it is the protocol's standard one. */
    private final String hostHeader;
    /** The encoded path up to the key: {@code /bucket/} in path style, {@code /} in virtual-hosted style. */
    private final String basePath;

    private DirectGet(
            SdkHttpClient http, AwsCredentialsProvider credentials, Region region, URL base, String basePath) {
        this.http = http;
        this.credentials = credentials;
        this.region = region.id();
        this.protocol = base.getProtocol();
        this.host = base.getHost();
        this.port = base.getPort() < 0 ? SdkHttpUtils.standardPort(protocol) : base.getPort();
        this.hostHeader = SdkHttpUtils.isUsingStandardPort(protocol, port) ? host : host + ":" + port;
        this.basePath = basePath;
    }

    /**
     * {@return why the direct path does not apply to this bucket, or null if it does}: a directory bucket
     * (S3 Express One Zone, {@code --x-s3}: session credentials the SDK creates), an Object Lambda access point alias
     * ({@code --ol-s3}: another signing name) or a multi-region access point alias ({@code .mrap}: SigV4a) are left to
     * the S3 client. The bucket pattern of the builder already rules out ARNs.
     */
    static String notApplicable(String bucket) {
        if (bucket.endsWith("--x-s3")) {
            return "a directory bucket (S3 Express One Zone)";
        }
        if (bucket.endsWith("--ol-s3")) {
            return "an Object Lambda access point alias";
        }
        if (bucket.endsWith(".mrap")) {
            return "a multi-region access point alias";
        }
        return null;
    }

    /**
     * Resolves the URL of the bucket once, with the client's own endpoint rules (region, endpoint override, path
     * style, FIPS and dual-stack settings), through {@link software.amazon.awssdk.services.s3.S3Utilities#getUrl}.
     *
     * @throws IllegalStateException if the URL the SDK makes has no recognisable key part
     */
    static DirectGet create(
            S3Client s3, SdkHttpClient http, AwsCredentialsProvider credentials, Region region, String bucket) {
        URL url = s3.utilities().getUrl(r -> r.bucket(bucket).key(PROBE_KEY));
        String path = url.getPath(); // as the SDK encoded it (URL does not decode)
        if (url.getQuery() != null || !path.endsWith("/" + PROBE_KEY)) {
            throw new IllegalStateException("cannot derive the bucket URL of '" + bucket + "' from " + url);
        }
        return new DirectGet(http, credentials, region, url, path.substring(0, path.length() - PROBE_KEY.length()));
    }

    /** What one direct attempt came to. */
    enum Outcome {
        /** Every byte asked for is in the destination, checked. */
        DONE,
        /** An answer that is not the data (a 4xx, a check that failed): ask the S3 client at once, which maps it. */
        ANSWER,
        /** A fault worth a retry (a 5xx, 429, an I/O error, a body cut short): back off, then ask the S3 client. */
        FAULT
    }

    /** One attempt's result; {@link #done} counts the bytes in the destination, including those from before. */
    static final class Attempt {
        Outcome outcome;
        long done;
        /** For a fault: what it was, for the retry message, and whether the store asked to slow down. */
        String detail;

        Exception failure;
        boolean throttled;

        private Attempt fault(String detail, Exception failure, boolean throttled) {
            this.outcome = Outcome.FAULT;
            this.detail = detail;
            this.failure = failure;
            this.throttled = throttled;
            return this;
        }

        private Attempt answer(String detail) {
            this.outcome = Outcome.ANSWER;
            this.detail = detail;
            return this;
        }
    }

    /**
     * Sends {@code GET <key>} with {@code Range: bytes=from-last} (and {@code If-Match}) and copies the body into
     * {@code dst} from offset {@code done}. Never throws for what the store answers or for an I/O error: those are in
     * the returned {@link Attempt}; a failure to sign (credentials that cannot be resolved) is an {@link
     * Outcome#ANSWER}
     * too, so the S3 client reports it in its own words.
     *
     * @param s3Key     the object's key in the bucket (not encoded)
     * @param from      the first byte asked for
     * @param last      the last byte asked for
     * @param objectSize the object's size, as listed or stated
     * @param ifMatch   the {@code If-Match} value, or null to send none
     * @param version   the ETag the response must carry
     * @param dst       the destination
     * @param done      how many bytes of {@code dst} hold data already; the body goes after them
     * @param chunk     a transfer buffer
     */
    Attempt get(
            String s3Key,
            long from,
            long last,
            long objectSize,
            String ifMatch,
            String version,
            MemorySegment dst,
            long done,
            byte[] chunk) {
        Attempt attempt = new Attempt();
        attempt.done = done;
        SdkHttpRequest signed;
        try {
            SdkHttpRequest.Builder request = SdkHttpRequest.builder()
                    .method(SdkHttpMethod.GET)
                    .protocol(protocol)
                    .host(host)
                    .port(port)
                    .encodedPath(basePath + SdkHttpUtils.urlEncodeIgnoreSlashes(s3Key))
                    .putHeader("Host", hostHeader)
                    .putHeader("Range", "bytes=" + from + "-" + last);
            if (ifMatch != null) {
                request.putHeader("If-Match", ifMatch);
            }
            SdkHttpRequest unsigned = request.build();
            // Resolved per request, as the S3 client does: providers that cache (the default chain, instance and
            // container credentials) refresh expiring credentials themselves, and answer from their cache.
            var identity = credentials.resolveCredentials();
            SignedRequest result = signer.sign(r -> r.identity(identity)
                    .request(unsigned)
                    .putProperty(AwsV4HttpSigner.SERVICE_SIGNING_NAME, "s3")
                    .putProperty(AwsV4HttpSigner.REGION_NAME, region)
                    // S3's rules: the path is signed as sent, not encoded twice nor normalised ('//', '.').
                    .putProperty(AwsV4HttpSigner.DOUBLE_URL_ENCODE, false)
                    .putProperty(AwsV4HttpSigner.NORMALIZE_PATH, false)
                    // A GET has no body: x-amz-content-sha256 is UNSIGNED-PAYLOAD, as the S3 client sends it.
                    .putProperty(AwsV4HttpSigner.PAYLOAD_SIGNING_ENABLED, false));
            signed = result.request();
        } catch (RuntimeException e) {
            return attempt.answer("cannot sign: " + e);
        }
        ExecutableHttpRequest call =
                http.prepareRequest(HttpExecuteRequest.builder().request(signed).build());
        HttpExecuteResponse response;
        try {
            response = call.call();
        } catch (IOException e) {
            return attempt.fault(e.toString(), e, false);
        } catch (RuntimeException e) {
            return attempt.answer(e.toString());
        }
        AbortableInputStream body = response.responseBody().orElse(null);
        boolean reuse = false; // whether the connection goes back to the pool: a complete body, or an error answer
        try {
            SdkHttpResponse head = response.httpResponse();
            int status = head.statusCode();
            long expected = last - from + 1;
            if (status != 206 && !(status == 200 && from == 0 && expected == objectSize)) {
                reuse = status >= 300;
                if (status >= 500 || status == 429 || status == 408) {
                    return attempt.fault("HTTP " + status, null, status == 503 || status == 429);
                }
                return attempt.answer("HTTP " + status);
            }
            String mismatch = mismatch(head, status, from, last, objectSize, expected, version);
            if (mismatch != null) {
                return attempt.answer(mismatch);
            }
            if (body == null) {
                return attempt.answer("no body");
            }
            long length = dst.byteSize();
            while (attempt.done < length) { // done advances per chunk: a break resumes after the last byte kept
                int n = body.read(chunk, 0, (int) Math.min(chunk.length, length - attempt.done));
                if (n < 0) {
                    return attempt.fault("ended after " + attempt.done + " of " + length + " bytes", null, false);
                }
                MemorySegment.copy(chunk, 0, dst, ValueLayout.JAVA_BYTE, attempt.done, n);
                attempt.done += n;
            }
            if (body.read() != -1) {
                return attempt.answer("more than the " + expected + " bytes asked for");
            }
            reuse = true;
            attempt.outcome = Outcome.DONE;
            return attempt;
        } catch (IOException e) {
            return attempt.fault(attempt.done + " of " + dst.byteSize() + " bytes received: " + e, e, false);
        } finally {
            close(body, reuse);
        }
    }

    /** {@return what in the response head differs from the request, or null}: the ETag, the range, the length */
    private static String mismatch(
            SdkHttpResponse head, int status, long from, long last, long objectSize, long expected, String version) {
        String etag = head.firstMatchingHeader("ETag").orElse(null);
        if (!version.equals(etag)) {
            return "ETag " + etag + " (expected: " + version + ")";
        }
        Optional<String> contentLength = head.firstMatchingHeader("Content-Length");
        if (contentLength.isPresent() && !contentLength.get().trim().equals(Long.toString(expected))) {
            return "Content-Length " + contentLength.get() + " (expected: " + expected + ")";
        }
        if (status == 206) {
            String contentRange = head.firstMatchingHeader("Content-Range").orElse(null);
            String wanted = "bytes " + from + "-" + last + "/" + objectSize;
            if (contentRange == null || !contentRange.trim().equals(wanted)) {
                return "Content-Range " + contentRange + " (expected: " + wanted + ")";
            }
        }
        return null;
    }

    /**
     * Ends the response. With {@code reuse}, the body — read to its end, or an error answer's few hundred bytes of
     * XML, drained up to 64 KiB — is closed, which hands the connection back to the pool; any other body is aborted,
     * which closes the connection instead of reading a broken or unwanted body to its end.
     */
    private static void close(AbortableInputStream body, boolean reuse) {
        if (body == null) {
            return;
        }
        try {
            if (reuse && drained(body)) {
                body.close();
            } else {
                body.abort();
            }
        } catch (IOException | RuntimeException e) {
            body.abort();
        }
    }

    private static boolean drained(InputStream body) throws IOException {
        return body.skip(64 * 1024) < 64 * 1024 && body.read() == -1;
    }
}
