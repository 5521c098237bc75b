// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.PageKey;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.function.Consumer;
import java.util.function.LongConsumer;
import java.util.zip.CRC32C;

/**
 * The byte layout of a segment file, version {@value #FORMAT}; {@code docs/disk-format.md} describes it in prose.
 *
 * <pre>
 * offset 0            segment header (64 bytes)
 * 64 ..               record headers, appended upwards, each a multiple of 8 bytes
 *   ..                (free)
 *   .. size           payloads, appended downwards; 4 KiB aligned if at least 4 KiB long, else 64-byte aligned
 * </pre>
 *
 * All integers are little-endian. A record header names its page completely (origin, key, version, extent), the
 * segment it belongs to, where its payload lies and the payload's CRC32C, and ends with a CRC32C of itself. A
 * segment is scanned from the first record header up to the first one that is not valid: zeros (never written), a
 * torn write, or damage. Headers are reserved in the same order as their payloads, so payload offsets strictly
 * decrease along the scan and no payload byte can ever be read as a header. Each record carries the segment's append
 * generation, which grows each time appends resume after a restart and never decreases along the scan, so a record
 * left from before a restart cannot reappear after the records written since.
 *
 * <p>Stateless; thread-safe.
 */
final class SegmentFormat {

    /**
     * The on-disk format this code writes. Bumped on any incompatible change. Format 2 (shared directories) adds the
     * owner of a segment to its header and the file {@code granary.shared}; records are those of format 1, and
     * segments of format 1 are read as segments with no owner.
     */
    static final int FORMAT = 2;
    /** The oldest format whose segments this code reads as they are. */
    static final int OLDEST_READABLE = 1;

    static final int SEGMENT_HEADER = 64;
    static final long SEGMENT_MAGIC = 0x31474553594E5247L; // "GRNYSEG1" little-endian
    static final int RECORD_MAGIC = 0x52594E47; // "GNYR" little-endian
    static final int FLAG_PAGE = 0;
    static final int FLAG_SKIP = 1;
    /** Fixed part of a record header, before the strings; a 4-byte CRC follows the strings. */
    static final int RECORD_FIXED = 64;

    static final int MAX_RECORD_HEADER = 64 << 10;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private SegmentFormat() {}

    /** {@return the alignment of a payload of {@code length} bytes} */
    static int alignment(int length) {
        return length >= 4096 ? 4096 : 64;
    }

    // ---- segment header: magic(8) format(4) reserved(4) id(8) size(8) createdMillis(8) owner(8) reserved(12) crc(4)

    static byte[] segmentHeader(long id, long size, long createdMillis, long owner) {
        ByteBuffer b = ByteBuffer.allocate(SEGMENT_HEADER).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(0, SEGMENT_MAGIC)
                .putInt(8, FORMAT)
                .putLong(16, id)
                .putLong(24, size)
                .putLong(32, createdMillis)
                .putLong(40, owner);
        b.putInt(60, crc(b.array(), 0, 60));
        return b.array();
    }

    /**
     * Checks a segment header against the file it was read from.
     *
     * @return {@code null} if valid, else what is wrong
     */
    static String checkSegmentHeader(MemorySegment map, long expectedId, long fileSize) {
        if (map.byteSize() < SEGMENT_HEADER) {
            return "shorter than a segment header";
        }
        byte[] h = map.asSlice(0, SEGMENT_HEADER).toArray(ValueLayout.JAVA_BYTE);
        ByteBuffer b = ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN);
        if (b.getLong(0) != SEGMENT_MAGIC) {
            return "no segment magic";
        }
        if (b.getInt(60) != crc(h, 0, 60)) {
            return "segment header checksum mismatch";
        }
        if (b.getInt(8) < OLDEST_READABLE || b.getInt(8) > FORMAT) {
            return "segment format " + b.getInt(8) + " (expected: " + OLDEST_READABLE + " to " + FORMAT + ")";
        }
        if (b.getLong(16) != expectedId) {
            return "segment id " + b.getLong(16) + " does not match its file name (" + expectedId + ")";
        }
        if (b.getLong(24) != fileSize) {
            return "segment size " + b.getLong(24) + " does not match the file's " + fileSize + " bytes";
        }
        return null;
    }

    /**
     * {@return the owner id in a checked segment header}: the shared-mode tier that created the segment and may still
     * append to it; 0 for none (format 1, or a tier opened unshared)
     */
    static long owner(MemorySegment map) {
        return map.get(INT, 8) >= 2 ? map.get(LONG, 40) : 0;
    }

    // ---- record header ----
    // magic(4) headerLength(4) segmentId(8) payloadOffset(8) pageOffset(8) length(4) payloadCrc(4) flags(4)
    // originLen(4) keyLen(4) versionLen(4) generation(4) reserved(4) | origin key version (UTF-8) | crc(4) | padding

    /** The encoded strings of a key, computed once per put. */
    record Names(byte[] origin, byte[] key, byte[] version) {

        static Names of(PageKey key) {
            return new Names(
                    key.origin().getBytes(StandardCharsets.UTF_8),
                    key.key().getBytes(StandardCharsets.UTF_8),
                    key.version().getBytes(StandardCharsets.UTF_8));
        }

        int headerLength() {
            return align8(RECORD_FIXED + origin.length + key.length + version.length + 4);
        }
    }

    /** Encodes a record header; {@code flags} is {@link #FLAG_PAGE} or {@link #FLAG_SKIP}. */
    static byte[] recordHeader(
            Names names, long segmentId, int generation, long payloadOffset, PageKey key, int payloadCrc, int flags) {
        // Stores through array views, not a ByteBuffer: one allocation per put fewer, and no buffer bounds checks
        // (a 4 KiB page's put is short enough for that to show, decision 0013).
        int length = names.headerLength();
        byte[] h = new byte[length];
        I32.set(h, 0, RECORD_MAGIC);
        I32.set(h, 4, length);
        I64.set(h, 8, segmentId);
        I64.set(h, 16, payloadOffset);
        I64.set(h, 24, key.offset());
        I32.set(h, 32, key.length());
        I32.set(h, 36, payloadCrc);
        I32.set(h, 40, flags);
        I32.set(h, 44, names.origin.length);
        I32.set(h, 48, names.key.length);
        I32.set(h, 52, names.version.length);
        I32.set(h, 56, generation);
        // 60: reserved, zero
        int at = RECORD_FIXED;
        System.arraycopy(names.origin, 0, h, at, names.origin.length);
        at += names.origin.length;
        System.arraycopy(names.key, 0, h, at, names.key.length);
        at += names.key.length;
        System.arraycopy(names.version, 0, h, at, names.version.length);
        at += names.version.length;
        I32.set(h, at, crc(h, 0, at));
        return h;
    }

    private static final VarHandle I32 = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle I64 = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    /** One valid record found by {@link #scan}. */
    record ScannedRecord(PageKey key, long headerOffset, long payloadOffset, int payloadCrc) {}

    /**
     * What a scan found: where the header area ends, where payloads begin, the generation of the last valid record,
     * and whether it stopped on damage.
     */
    record ScanEnd(long headerEnd, long payloadStart, int generation, String damage) {}

    /**
     * Reads the record headers of a segment in order, passing each valid page record to {@code sink}, and stops at the
     * first header that is not valid. {@code readingAt} hears of every megabyte the scan enters, so the caller can ask
     * the kernel for it in one read.
     *
     * @return where the scan stopped; {@code damage} is {@code null} for a clean end (never-written zeros)
     */
    static ScanEnd scan(MemorySegment map, long segmentId, Consumer<ScannedRecord> sink, LongConsumer readingAt) {
        return scan(map, segmentId, SEGMENT_HEADER, map.byteSize(), 0, sink, readingAt);
    }

    /**
     * Goes on with a scan where an earlier one ended ({@code from}, {@code floor} and {@code generation} as its
     * {@link ScanEnd} said): how a process sees the records another process appended since (shared directories).
     */
    static ScanEnd scan(
            MemorySegment map,
            long segmentId,
            long from,
            long floor,
            int fromGeneration,
            Consumer<ScannedRecord> sink,
            LongConsumer readingAt) {
        // Consecutive records are mostly pages of one object: reuse the previous record's strings when the bytes
        // are the same, rather than decoding them again (recovery's cost is per record).
        String[] names = new String[3];
        return scan(
                map,
                segmentId,
                from,
                floor,
                fromGeneration,
                (h,
                        originLen,
                        keyLen,
                        versionLen,
                        same,
                        headerOffset,
                        pageOffset,
                        length,
                        payloadOffset,
                        payloadCrc) -> {
                    int keyAt = RECORD_FIXED + originLen;
                    if ((same & SAME_ORIGIN) == 0) {
                        names[0] = new String(h, RECORD_FIXED, originLen, StandardCharsets.UTF_8);
                    }
                    if ((same & SAME_KEY) == 0) {
                        names[1] = new String(h, keyAt, keyLen, StandardCharsets.UTF_8);
                    }
                    if ((same & SAME_VERSION) == 0) {
                        names[2] = new String(h, keyAt + keyLen, versionLen, StandardCharsets.UTF_8);
                    }
                    sink.accept(new ScannedRecord(
                            new PageKey(names[0], names[1], names[2], pageOffset, length),
                            headerOffset,
                            payloadOffset,
                            payloadCrc));
                },
                readingAt);
    }

    /** Flags of {@link RawSink#record}: which names are byte for byte those of the previous page record. */
    static final int SAME_ORIGIN = 1;

    static final int SAME_KEY = 2;
    static final int SAME_VERSION = 4;
    static final int SAME_ALL = SAME_ORIGIN | SAME_KEY | SAME_VERSION;

    /** Receives each valid page record of a scan, its names still bytes. */
    interface RawSink {
        /**
         * Receives one valid page record.
         *
         * @param header the record header's bytes, valid during the call only: origin at {@link #RECORD_FIXED}, then
         *               key, then version
         * @param same   which names equal the previous page record's ({@link #SAME_ORIGIN} and so on); 0 for the
         *               first record of a scan
         */
        void record(
                byte[] header,
                int originLength,
                int keyLength,
                int versionLength,
                int same,
                long headerOffset,
                long pageOffset,
                int length,
                long payloadOffset,
                int payloadCrc);
    }

    /**
     * The scan itself, handing each valid page record to {@code sink} with its names as bytes; the other
     * {@code scan} methods decode them.
     */
    static ScanEnd scan(
            MemorySegment map,
            long segmentId,
            long from,
            long floor,
            int fromGeneration,
            RawSink sink,
            LongConsumer readingAt) {
        long position = from;
        long payloadFloor = floor; // every payload lies in [headers end, payloadFloor)
        long nextWindow = 0;
        int generation = fromGeneration;
        byte[] previous = null;
        byte[] bufferA = new byte[256];
        byte[] bufferB = new byte[256];
        int previousOrigin = 0;
        int previousKey = 0;
        int previousVersion = 0;
        while (position + RECORD_FIXED + 4 <= payloadFloor) {
            if (position >= nextWindow) {
                readingAt.accept(position);
                nextWindow = (position & -4096L) + (1L << 20);
            }
            int magic = map.get(INT, position);
            if (magic == 0 && map.get(INT, position + 4) == 0) {
                return new ScanEnd(position, payloadFloor, generation, null);
            }
            String damage = null;
            int headerLength = map.get(INT, position + 4);
            if (magic != RECORD_MAGIC) {
                damage = "no record magic";
            } else if (headerLength < RECORD_FIXED + 4
                    || headerLength > MAX_RECORD_HEADER
                    || (headerLength & 7) != 0
                    || position + headerLength > payloadFloor) {
                damage = "record header length " + headerLength + " out of bounds";
            }
            if (damage != null) {
                return new ScanEnd(position, payloadFloor, generation, damage + " at offset " + position);
            }
            // Two buffers taken in turn, not an array per record: the previous record's bytes stay for the name
            // comparison below. Recovery's cost is per record, and a million records are a million arrays.
            byte[] h = previous == bufferA ? bufferB : bufferA;
            if (h.length < headerLength) {
                h = new byte[Math.max(headerLength, 2 * h.length)];
                if (previous == bufferA) {
                    bufferB = h;
                } else {
                    bufferA = h;
                }
            }
            MemorySegment.copy(map, ValueLayout.JAVA_BYTE, position, h, 0, headerLength);
            ByteBuffer b = ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN);
            int originLen = b.getInt(44);
            int keyLen = b.getInt(48);
            int versionLen = b.getInt(52);
            long strings = (long) originLen + keyLen + versionLen;
            if (originLen < 0 || keyLen < 0 || versionLen < 0 || RECORD_FIXED + strings + 4 > headerLength) {
                return new ScanEnd(
                        position,
                        payloadFloor,
                        generation,
                        "record string lengths out of bounds at offset " + position);
            }
            int crcAt = (int) (RECORD_FIXED + strings);
            if (b.getInt(crcAt) != crc(h, 0, crcAt)) {
                return new ScanEnd(
                        position, payloadFloor, generation, "record header checksum mismatch at offset " + position);
            }
            long recordSegment = b.getLong(8);
            long payloadOffset = b.getLong(16);
            long pageOffset = b.getLong(24);
            int length = b.getInt(32);
            int flags = b.getInt(40);
            long headerEnd = position + headerLength;
            if (recordSegment != segmentId) {
                return new ScanEnd(
                        position,
                        payloadFloor,
                        generation,
                        "record of segment " + recordSegment + " at offset " + position);
            }
            int recordGeneration = b.getInt(56);
            if (recordGeneration < generation) {
                // Written before appends resumed after a restart, and left beyond a slot a crash never filled: the
                // log ended before it. A clean end, not damage.
                return new ScanEnd(position, payloadFloor, generation, null);
            }
            if (length < 0
                    || pageOffset < 0
                    || pageOffset > Long.MAX_VALUE - length
                    || payloadOffset < headerEnd
                    || payloadOffset > payloadFloor - length
                    || (flags != FLAG_PAGE && flags != FLAG_SKIP)) {
                return new ScanEnd(
                        position, payloadFloor, generation, "record extent out of bounds at offset " + position);
            }
            generation = recordGeneration;
            if (flags == FLAG_PAGE) {
                int keyAt = RECORD_FIXED + originLen;
                int versionAt = keyAt + keyLen;
                int same = 0;
                if (previous != null) {
                    int previousKeyAt = RECORD_FIXED + previousOrigin;
                    int previousVersionAt = previousKeyAt + previousKey;
                    if (Arrays.equals(h, RECORD_FIXED, keyAt, previous, RECORD_FIXED, previousKeyAt)) {
                        same |= SAME_ORIGIN;
                    }
                    if (Arrays.equals(h, keyAt, versionAt, previous, previousKeyAt, previousVersionAt)) {
                        same |= SAME_KEY;
                    }
                    if (Arrays.equals(
                            h,
                            versionAt,
                            versionAt + versionLen,
                            previous,
                            previousVersionAt,
                            previousVersionAt + previousVersion)) {
                        same |= SAME_VERSION;
                    }
                }
                previous = h;
                previousOrigin = originLen;
                previousKey = keyLen;
                previousVersion = versionLen;
                sink.record(
                        h,
                        originLen,
                        keyLen,
                        versionLen,
                        same,
                        position,
                        pageOffset,
                        length,
                        payloadOffset,
                        b.getInt(36));
            }
            payloadFloor = payloadOffset;
            position = headerEnd;
        }
        return new ScanEnd(position, payloadFloor, generation, null);
    }

    /**
     * What lies beyond a scan that stopped on damage: the valid page records found by searching on, eight bytes at a
     * time, for the next header that checks out (magic, lengths, checksum, this segment, a generation not below the
     * last one accepted, an extent below the previous payload), and scanning from there.
     *
     * @param pages page records found after the damage, and the damaged record itself if it has a record's magic
     * @param bytes the bytes of the pages found after it
     */
    record Beyond(long pages, long bytes) {}

    /**
     * Counts the page records a scan that stopped on damage left behind: what recovery drops with the damaged record,
     * so that {@code granary verify} can say how many pages it could not vouch for. Only counts: a tier never indexes
     * these records (after damage, the log's order is no longer proven). Reads the rest of the header area once.
     *
     * @param end where the scan stopped, with its damage
     */
    static Beyond countBeyond(MemorySegment map, long segmentId, ScanEnd end) {
        // The damaged record itself, if it started as one: its page is dropped too (its length is not known).
        long pages = end.headerEnd() >= SEGMENT_HEADER
                        && end.headerEnd() + 4 <= map.byteSize()
                        && map.get(INT, end.headerEnd()) == RECORD_MAGIC
                ? 1
                : 0;
        long bytes = 0;
        long floor = end.payloadStart();
        int generation = end.generation();
        long[] counted = new long[2];
        RawSink counter =
                (h,
                        originLen,
                        keyLen,
                        versionLen,
                        same,
                        headerOffset,
                        pageOffset,
                        length,
                        payloadOffset,
                        payloadCrc) -> {
                    counted[0]++;
                    counted[1] += length;
                };
        for (long at = end.headerEnd() + 8; at + RECORD_FIXED + 4 <= floor; at += 8) {
            if (map.get(INT, at) != RECORD_MAGIC) {
                continue;
            }
            counted[0] = 0;
            counted[1] = 0;
            ScanEnd next = scan(map, segmentId, at, floor, generation, counter, position -> {});
            if (next.headerEnd() == at) {
                continue; // no valid record here
            }
            pages += counted[0];
            bytes += counted[1];
            if (next.damage() == null) {
                break;
            }
            floor = next.payloadStart();
            generation = next.generation();
            at = next.headerEnd(); // the loop steps past the damaged header
        }
        return new Beyond(pages, bytes);
    }

    /**
     * The page records of one segment as a recovery scan found them, in primitive columns, names as bytes: no
     * object per record, and none per name when its key and version are ASCII ({@link ObjectNames}). Reused from
     * one segment to the next. Consecutive records of one object share one name.
     */
    static final class Records implements RawSink {
        int size;
        long[] pageOffset = new long[1024];
        int[] length = new int[1024];
        long[] payload = new long[1024];
        int[] crc = new int[1024];
        /** Per record: its name's number, below. */
        int[] name = new int[1024];

        int names;
        /** Per name: origin (decoded: few), key and version bytes in {@link #bytes}, and the name's hash. */
        String[] origin = new String[256];

        int[] keyAt = new int[256];
        int[] keyLength = new int[256];
        int[] versionLength = new int[256];
        int[] hash = new int[256];
        /** Per name: its key and version decoded, if they are not ASCII; else null (kept as bytes). */
        String[] keyString = new String[256];

        String[] versionString = new String[256];
        byte[] bytes = new byte[16 << 10];
        int bytesUsed;

        /** Empties it for the next segment. */
        void clear() {
            size = 0;
            names = 0;
            bytesUsed = 0;
            Arrays.fill(keyString, null);
            Arrays.fill(versionString, null);
        }

        @Override
        public void record(
                byte[] h,
                int originLen,
                int keyLen,
                int versionLen,
                int same,
                long headerOffset,
                long pageOffset,
                int length,
                long payloadOffset,
                int payloadCrc) {
            if (size == this.pageOffset.length) {
                int n = size + (size >> 1);
                this.pageOffset = Arrays.copyOf(this.pageOffset, n);
                this.length = Arrays.copyOf(this.length, n);
                payload = Arrays.copyOf(payload, n);
                crc = Arrays.copyOf(crc, n);
                name = Arrays.copyOf(name, n);
            }
            if (same != SAME_ALL || names == 0) {
                addName(h, originLen, keyLen, versionLen, (same & SAME_ORIGIN) != 0 && names > 0);
            }
            int r = size++;
            this.pageOffset[r] = pageOffset;
            this.length[r] = length;
            payload[r] = payloadOffset;
            crc[r] = payloadCrc;
            name[r] = names - 1;
        }

        private void addName(byte[] h, int originLen, int keyLen, int versionLen, boolean sameOrigin) {
            if (names == origin.length) {
                int n = names * 2;
                origin = Arrays.copyOf(origin, n);
                keyAt = Arrays.copyOf(keyAt, n);
                keyLength = Arrays.copyOf(keyLength, n);
                versionLength = Arrays.copyOf(versionLength, n);
                hash = Arrays.copyOf(hash, n);
                keyString = Arrays.copyOf(keyString, n);
                versionString = Arrays.copyOf(versionString, n);
            }
            int i = names++;
            origin[i] = sameOrigin ? origin[i - 1] : new String(h, RECORD_FIXED, originLen, StandardCharsets.UTF_8);
            int keyFrom = RECORD_FIXED + originLen;
            int both = keyLen + versionLen;
            if (ObjectNames.ascii(h, keyFrom, both)) {
                if (bytesUsed + both > bytes.length) {
                    bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, bytesUsed + both));
                }
                System.arraycopy(h, keyFrom, bytes, bytesUsed, both);
                keyAt[i] = bytesUsed;
                keyLength[i] = keyLen;
                versionLength[i] = versionLen;
                hash[i] = ObjectNames.hash(origin[i], bytes, bytesUsed, keyLen, bytesUsed + keyLen, versionLen);
                bytesUsed += both;
            } else {
                keyString[i] = new String(h, keyFrom, keyLen, StandardCharsets.UTF_8);
                versionString[i] = new String(h, keyFrom + keyLen, versionLen, StandardCharsets.UTF_8);
                hash[i] = ObjectNames.hash(origin[i], keyString[i], versionString[i]);
            }
        }

        /** {@return the key of record {@code r}}; for tests and messages */
        PageKey key(int r) {
            int n = name[r];
            String k = keyString[n] != null
                    ? keyString[n]
                    : new String(bytes, keyAt[n], keyLength[n], StandardCharsets.US_ASCII);
            String v = versionString[n] != null
                    ? versionString[n]
                    : new String(bytes, keyAt[n] + keyLength[n], versionLength[n], StandardCharsets.US_ASCII);
            return new PageKey(origin[n], k, v, pageOffset[r], length[r]);
        }
    }

    static int crc(byte[] bytes, int from, int to) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, from, to - from);
        return (int) crc.getValue();
    }

    static int crc(MemorySegment segment) {
        CRC32C crc = new CRC32C();
        crc.update(segment.asByteBuffer());
        return (int) crc.getValue();
    }

    static int align8(int n) {
        return (n + 7) & ~7;
    }
}
