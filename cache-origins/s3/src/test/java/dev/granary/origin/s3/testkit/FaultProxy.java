// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.s3.testkit;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A loopback HTTP/1.1 proxy that sits in front of a real S3 server and injects the faults object stores have: added
 * latency per request, a bandwidth cap per connection, bursts of {@code 503 SlowDown} answered by the proxy itself,
 * connections reset in the middle of a response, canned answers (wrong headers, bodies cut short), and a black hole
 * that accepts requests and never answers. The
 * upstream port can be switched (a server restarted on another port).
 *
 * <p>It understands just enough HTTP for an SDK client that does not pipeline: a request is a head up to the blank
 * line plus {@code Content-Length} bytes of body; responses are pumped back as raw bytes. Faults are set at any time
 * and apply to requests that arrive afterwards. Threads: one virtual thread per direction per connection.
 */
public final class FaultProxy implements AutoCloseable {

    private final ServerSocket server;
    private final Thread acceptor;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private volatile int upstreamPort;
    private volatile long latencyNanos;
    private volatile long bytesPerSecond;
    private volatile boolean blackhole;
    private final AtomicInteger failuresLeft = new AtomicInteger();
    private volatile int failureStatus = 503;
    private volatile String failureCode = "SlowDown";
    private final AtomicLong resetAfter = new AtomicLong(-1);
    private final AtomicReference<byte[]> cannedAnswer = new AtomicReference<>();
    private final AtomicInteger requests = new AtomicInteger();
    private final AtomicInteger injected = new AtomicInteger();
    private final AtomicInteger resets = new AtomicInteger();
    private final AtomicLong responseBytes = new AtomicLong();
    private volatile boolean closed;

    private FaultProxy(int upstreamPort) throws IOException {
        this.upstreamPort = upstreamPort;
        this.server = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
        this.acceptor = Thread.ofVirtual().name("fault-proxy-accept").start(this::accept);
    }

    /** Starts a proxy to {@code 127.0.0.1:upstreamPort}. */
    public static FaultProxy start(int upstreamPort) throws IOException {
        return new FaultProxy(upstreamPort);
    }

    public URI endpoint() {
        return URI.create("http://127.0.0.1:" + server.getLocalPort());
    }

    /** Sends new connections to another upstream port. */
    public FaultProxy upstream(int port) {
        this.upstreamPort = port;
        return this;
    }

    /** Delays every request by this much before forwarding it (the round trip of a far-away store). */
    public FaultProxy latency(Duration perRequest) {
        this.latencyNanos = perRequest.toNanos();
        return this;
    }

    /** Caps each connection's response bytes at this rate; 0 lifts the cap. */
    public FaultProxy bandwidth(long bytesPerSecond) {
        this.bytesPerSecond = bytesPerSecond;
        return this;
    }

    /** Answers the next {@code count} requests itself with {@code 503 SlowDown}, without forwarding them. */
    public FaultProxy failNext(int count) {
        return failNext(count, 503, "SlowDown");
    }

    /** Answers the next {@code count} requests itself with this status and S3 error code. */
    public FaultProxy failNext(int count, int status, String code) {
        this.failureStatus = status;
        this.failureCode = code;
        this.failuresLeft.set(count);
        return this;
    }

    /**
     * Answers the next request itself with these bytes — a whole HTTP/1.1 response, status line, headers and body, as
     * a misbehaving store or gateway would send it — without forwarding it, then closes the connection (so a body
     * shorter than its {@code Content-Length} reaches the client as a body cut short). Counted in
     * {@link #injectedFailures()}.
     */
    public FaultProxy answerNext(byte[] response) {
        this.cannedAnswer.set(response.clone());
        return this;
    }

    /** Resets (RST) the connection of the next forwarded request after this many bytes of its response. */
    public FaultProxy resetNextResponseAfter(long bytes) {
        this.resetAfter.set(bytes);
        return this;
    }

    /** While on, requests are read and never forwarded nor answered. Turning it off does not revive them. */
    public FaultProxy blackhole(boolean on) {
        this.blackhole = on;
        return this;
    }

    /** Lifts every fault. */
    public FaultProxy heal() {
        latencyNanos = 0;
        bytesPerSecond = 0;
        blackhole = false;
        failuresLeft.set(0);
        resetAfter.set(-1);
        cannedAnswer.set(null);
        return this;
    }

    /** {@return requests received, answered or not} */
    public int requests() {
        return requests.get();
    }

    /** {@return requests the proxy answered itself with an error} */
    public int injectedFailures() {
        return injected.get();
    }

    /** {@return response bytes passed to clients, over all connections} */
    public long responseBytes() {
        return responseBytes.get();
    }

    /** {@return connections reset in the middle of a response} */
    public int resets() {
        return resets.get();
    }

    private void accept() {
        while (!closed) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            sockets.add(client);
            Thread.ofVirtual().name("fault-proxy-conn").start(() -> serve(client));
        }
    }

    /** One client connection: reads requests, injects or forwards them; a pump thread carries responses back. */
    private void serve(Socket client) {
        Socket upstream = null;
        Connection connection = null;
        try (client) {
            client.setTcpNoDelay(true);
            InputStream in = client.getInputStream();
            OutputStream out = client.getOutputStream();
            while (!closed) {
                byte[] head = readHead(in);
                if (head == null) {
                    return;
                }
                requests.incrementAndGet();
                String headText = new String(head, StandardCharsets.ISO_8859_1);
                long bodyLength = contentLength(headText);
                byte[] body = in.readNBytes((int) bodyLength);
                if (blackhole) {
                    in.transferTo(OutputStream.nullOutputStream()); // until the client gives up and closes
                    return;
                }
                byte[] canned = cannedAnswer.getAndSet(null);
                if (canned != null) {
                    injected.incrementAndGet();
                    synchronized (out) {
                        out.write(canned);
                        out.flush();
                    }
                    return; // the connection ends with the answer
                }
                if (failuresLeft.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    injected.incrementAndGet();
                    boolean isHead = headText.regionMatches(true, 0, "HEAD ", 0, 5);
                    synchronized (out) {
                        out.write(errorResponse(failureStatus, failureCode, isHead));
                        out.flush();
                    }
                    continue;
                }
                long delay = latencyNanos;
                if (delay > 0) {
                    Thread.sleep(Duration.ofNanos(delay)); // the injected latency itself
                }
                if (upstream == null) {
                    upstream = new Socket();
                    // A small window: the server cannot push a whole body into kernel buffers ahead of the pacing,
                    // so a server killed mid-response really leaves the rest unsent.
                    upstream.setReceiveBufferSize(64 * 1024);
                    upstream.connect(new InetSocketAddress(InetAddress.ofLiteral("127.0.0.1"), upstreamPort), 5_000);
                    upstream.setTcpNoDelay(true);
                    sockets.add(upstream);
                    connection = new Connection(client, upstream);
                    Connection c = connection;
                    Thread.ofVirtual().name("fault-proxy-pump").start(c::pump);
                }
                long reset = resetAfter.getAndSet(-1);
                if (reset >= 0) {
                    connection.resetAt.set(connection.pumped.get() + reset);
                }
                OutputStream up = upstream.getOutputStream();
                up.write(head);
                up.write(body);
                up.flush();
            }
        } catch (IOException | InterruptedException e) {
            // a side went away: the connection ends; the client sees it as the server would make it see it
        } finally {
            if (upstream != null) {
                closeQuietly(upstream);
                sockets.remove(upstream);
            }
            sockets.remove(client);
        }
    }

    /** The response direction of one connection, paced and possibly reset. */
    private final class Connection {
        final Socket client;
        final Socket upstream;
        final AtomicLong pumped = new AtomicLong();
        final AtomicLong resetAt = new AtomicLong(Long.MAX_VALUE);

        Connection(Socket client, Socket upstream) {
            this.client = client;
            this.upstream = upstream;
        }

        void pump() {
            byte[] buffer = new byte[16 * 1024];
            long nextSend = System.nanoTime();
            try {
                InputStream in = upstream.getInputStream();
                OutputStream out = client.getOutputStream();
                while (true) {
                    long rate = bytesPerSecond;
                    int max = rate > 0 ? (int) Math.max(512, Math.min(buffer.length, rate / 200)) : buffer.length;
                    int n = in.read(buffer, 0, max);
                    if (n < 0) {
                        break;
                    }
                    long limit = resetAt.get() - pumped.get();
                    int send = (int) Math.min(n, Math.max(0, limit));
                    if (rate > 0) {
                        long now = System.nanoTime();
                        if (nextSend > now) {
                            Thread.sleep(Duration.ofNanos(nextSend - now)); // pacing: the injected bandwidth cap
                        }
                        nextSend = Math.max(now, nextSend) + send * 1_000_000_000L / rate;
                    }
                    synchronized (out) {
                        out.write(buffer, 0, send);
                        out.flush();
                    }
                    pumped.addAndGet(send);
                    responseBytes.addAndGet(send);
                    if (send < n) {
                        resets.incrementAndGet();
                        client.setSoLinger(true, 0); // RST, not FIN: a connection reset by peer
                        break;
                    }
                }
            } catch (IOException | InterruptedException e) {
                // either side went away
            } finally {
                closeQuietly(client); // the upstream closed (or failed): so does the client's connection
                closeQuietly(upstream);
            }
        }
    }

    private static byte[] readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream(512);
        int matched = 0;
        while (matched < 4) {
            int b = in.read();
            if (b < 0) {
                if (head.size() == 0) {
                    return null;
                }
                throw new IOException("request head cut short");
            }
            head.write(b);
            matched = (b == (matched % 2 == 0 ? '\r' : '\n')) ? matched + 1 : (b == '\r' ? 1 : 0);
        }
        return head.toByteArray();
    }

    private static long contentLength(String head) throws IOException {
        for (String line : head.split("\r\n")) {
            String lower = line.toLowerCase(Locale.ROOT);
            if (lower.startsWith("content-length:")) {
                return Long.parseLong(line.substring(15).trim());
            }
            if (lower.startsWith("transfer-encoding:") && lower.contains("chunked")) {
                throw new IOException("chunked request bodies are not supported by the fault proxy");
            }
        }
        return 0;
    }

    private static byte[] errorResponse(int status, String code, boolean isHead) {
        String body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code + "</Code><Message>"
                + "injected by FaultProxy</Message><RequestId>fault</RequestId></Error>";
        byte[] bodyBytes = body.getBytes(StandardCharsets.UTF_8);
        String head = "HTTP/1.1 " + status + " Injected\r\nContent-Type: application/xml\r\nContent-Length: "
                + bodyBytes.length + "\r\nx-amz-request-id: fault\r\n\r\n";
        byte[] headBytes = head.getBytes(StandardCharsets.ISO_8859_1);
        if (isHead) {
            return headBytes;
        }
        byte[] all = new byte[headBytes.length + bodyBytes.length];
        System.arraycopy(headBytes, 0, all, 0, headBytes.length);
        System.arraycopy(bodyBytes, 0, all, headBytes.length, bodyBytes.length);
        return all;
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    /** Drops every connection now (clients see resets or EOF) and stops accepting. */
    public void dropConnections() {
        for (Socket s : sockets) {
            closeQuietly(s);
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        server.close();
        dropConnections();
        acceptor.interrupt();
    }
}
