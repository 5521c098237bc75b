// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small, strict JSON reader (RFC 8259) for the metadata files of shard formats (MosaicML's {@code index.json}):
 * objects become {@link Map}s in document order, arrays {@link List}s, numbers {@link Long} when they are integers
 * that fit, else {@link BigInteger} or {@link Double}, and {@code null} stays {@code null}. Nesting is limited, so a
 * hostile file cannot overflow the stack. No dependency, so {@code cache-loader} keeps its small footprint.
 * Stateless; thread-safe.
 */
final class Json {

    private static final int MAX_DEPTH = 256;

    private final String text;
    private int at;

    private Json(String text) {
        this.text = text;
    }

    /**
     * Parses one JSON value that is the whole text (whitespace around it allowed).
     *
     * @param text the document
     * @return the value
     * @throws IllegalArgumentException naming the offset and what was expected, if the text is not JSON
     */
    static Object parse(String text) {
        Json json = new Json(text);
        json.space();
        Object value = json.value(0);
        json.space();
        if (json.at != text.length()) {
            throw json.error("the end of the document");
        }
        return value;
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("at most " + MAX_DEPTH + " levels of nesting");
        }
        if (at >= text.length()) {
            throw error("a value");
        }
        char c = text.charAt(at);
        return switch (c) {
            case '{' -> object(depth);
            case '[' -> array(depth);
            case '"' -> string();
            case 't' -> word("true", true);
            case 'f' -> word("false", false);
            case 'n' -> word("null", null);
            default -> number();
        };
    }

    private Map<String, Object> object(int depth) {
        at++;
        Map<String, Object> map = new LinkedHashMap<>();
        space();
        if (peek('}')) {
            at++;
            return Collections.unmodifiableMap(map);
        }
        while (true) {
            space();
            if (!peek('"')) {
                throw error("a member name in double quotes");
            }
            String key = string();
            space();
            expect(':');
            space();
            if (map.containsKey(key)) {
                throw error("no repeated member name ('" + key + "' again)");
            }
            map.put(key, value(depth + 1));
            space();
            if (peek(',')) {
                at++;
                continue;
            }
            expect('}');
            return Collections.unmodifiableMap(map);
        }
    }

    private List<Object> array(int depth) {
        at++;
        List<Object> list = new ArrayList<>();
        space();
        if (peek(']')) {
            at++;
            return Collections.unmodifiableList(list);
        }
        while (true) {
            space();
            list.add(value(depth + 1));
            space();
            if (peek(',')) {
                at++;
                continue;
            }
            expect(']');
            return Collections.unmodifiableList(list);
        }
    }

    private String string() {
        at++;
        StringBuilder b = new StringBuilder();
        while (true) {
            if (at >= text.length()) {
                throw error("a closing double quote");
            }
            char c = text.charAt(at++);
            if (c == '"') {
                return b.toString();
            }
            if (c < 0x20) {
                throw error("no control character in a string");
            }
            if (c != '\\') {
                b.append(c);
                continue;
            }
            if (at >= text.length()) {
                throw error("an escape");
            }
            char e = text.charAt(at++);
            switch (e) {
                case '"', '\\', '/' -> b.append(e);
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'n' -> b.append('\n');
                case 'r' -> b.append('\r');
                case 't' -> b.append('\t');
                case 'u' -> {
                    if (at + 4 > text.length()) {
                        throw error("four hex digits after \\u");
                    }
                    try {
                        b.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                    } catch (NumberFormatException x) {
                        throw error("four hex digits after \\u");
                    }
                    at += 4;
                }
                default -> throw error("a valid escape (\\" + e + " is not one)");
            }
        }
    }

    private Object word(String word, Object value) {
        if (!text.startsWith(word, at)) {
            throw error("a value");
        }
        at += word.length();
        return value;
    }

    private Object number() {
        int start = at;
        if (peek('-')) {
            at++;
        }
        int digits = at;
        while (at < text.length() && Character.isDigit(text.charAt(at))) {
            at++;
        }
        if (at == digits || (text.charAt(digits) == '0' && at - digits > 1)) {
            throw error("a number");
        }
        boolean integer = true;
        if (peek('.')) {
            integer = false;
            at++;
            int fraction = at;
            while (at < text.length() && Character.isDigit(text.charAt(at))) {
                at++;
            }
            if (at == fraction) {
                throw error("digits after the decimal point");
            }
        }
        if (peek('e') || peek('E')) {
            integer = false;
            at++;
            if (peek('+') || peek('-')) {
                at++;
            }
            int exponent = at;
            while (at < text.length() && Character.isDigit(text.charAt(at))) {
                at++;
            }
            if (at == exponent) {
                throw error("digits in the exponent");
            }
        }
        String n = text.substring(start, at);
        if (integer) {
            BigInteger big = new BigInteger(n);
            return big.bitLength() < 64 ? (Object) big.longValueExact() : big;
        }
        return new BigDecimal(n).doubleValue();
    }

    private void space() {
        while (at < text.length()) {
            char c = text.charAt(at);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            at++;
        }
    }

    private boolean peek(char c) {
        return at < text.length() && text.charAt(at) == c;
    }

    private void expect(char c) {
        if (!peek(c)) {
            throw error("'" + c + "'");
        }
        at++;
    }

    private IllegalArgumentException error(String expected) {
        String found = at >= text.length() ? "the end" : "'" + text.charAt(at) + "'";
        return new IllegalArgumentException("JSON at offset " + at + ": " + found + " (expected: " + expected + ")");
    }
}
