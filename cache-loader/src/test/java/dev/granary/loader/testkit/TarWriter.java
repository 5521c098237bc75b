package dev.granary.loader.testkit;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Writes plain ustar archives in memory, as webdataset shard writers do: one 512-byte header per member, data padded
 * to 512 bytes, two zero blocks at the end. Names up to 100 bytes, or up to 255 through the ustar prefix field.
 * For tests, benchmarks and the demo; real shards from Python's {@code tarfile} and GNU tar are in the tests'
 * fixtures.
 */
public final class TarWriter {

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private boolean finished;

    /**
     * Appends a regular file.
     *
     * @param name the member's path
     * @param data its bytes
     * @return the offset of the member's data in the archive
     */
    public long add(String name, byte[] data) {
        return add(name, data, '0');
    }

    /**
     * Appends a directory member (no data).
     *
     * @param name the directory's path, ending with '/'
     */
    public void addDirectory(String name) {
        add(name, new byte[0], '5');
    }

    private long add(String name, byte[] data, char type) {
        if (finished) {
            throw new IllegalStateException("archive already finished");
        }
        byte[] header = new byte[512];
        byte[] path = name.getBytes(StandardCharsets.UTF_8);
        if (path.length <= 100) {
            System.arraycopy(path, 0, header, 0, path.length);
        } else {
            int split = name.lastIndexOf('/', 155);
            byte[] prefix = name.substring(0, split).getBytes(StandardCharsets.UTF_8);
            byte[] rest = name.substring(split + 1).getBytes(StandardCharsets.UTF_8);
            if (split < 0 || prefix.length > 155 || rest.length > 100) {
                throw new IllegalArgumentException("name too long for ustar: " + name);
            }
            System.arraycopy(rest, 0, header, 0, rest.length);
            System.arraycopy(prefix, 0, header, 345, prefix.length);
        }
        octal(header, 100, 8, 0644);
        octal(header, 108, 8, 0);
        octal(header, 116, 8, 0);
        octal(header, 124, 12, data.length);
        octal(header, 136, 12, 0);
        header[156] = (byte) type;
        System.arraycopy("ustar\0".getBytes(StandardCharsets.US_ASCII), 0, header, 257, 6);
        header[263] = '0';
        header[264] = '0';
        Arrays.fill(header, 148, 156, (byte) ' ');
        int sum = 0;
        for (byte b : header) {
            sum += b & 0xff;
        }
        octal(header, 148, 7, sum);
        header[155] = ' ';
        out.writeBytes(header);
        long offset = out.size();
        out.writeBytes(data);
        int pad = (512 - data.length % 512) % 512;
        out.writeBytes(new byte[pad]);
        return offset;
    }

    /** {@return the archive, with its two closing zero blocks} */
    public byte[] finish() {
        if (!finished) {
            out.writeBytes(new byte[1024]);
            finished = true;
        }
        return out.toByteArray();
    }

    private static void octal(byte[] header, int offset, int length, long value) {
        String digits = Long.toOctalString(value);
        int width = length - 1; // NUL-terminated
        if (digits.length() > width) {
            throw new IllegalArgumentException("value " + value + " does not fit " + width + " octal digits");
        }
        String padded = "0".repeat(width - digits.length()) + digits;
        System.arraycopy(padded.getBytes(StandardCharsets.US_ASCII), 0, header, offset, width);
        header[offset + width] = 0;
    }
}
