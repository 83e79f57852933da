package serverlab.contract;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Looks up one parameter in a raw query string decoded as {@code
 * application/x-www-form-urlencoded}: pairs split on {@code &}, name and value on the first {@code
 * =}, {@code +} is a space, {@code %XX} a byte, and the bytes are UTF-8.
 *
 * <p>The contract knows one parameter per route, so a single pass looks for that name only and
 * reports whether it came once, never or more than once. Other parameters are never decoded, so a
 * malformed unknown parameter is ignored like any other unknown one.
 */
public final class FormQuery {

  /** How often the parameter occurs. */
  public enum Presence {
    ABSENT,
    ONCE,
    REPEATED
  }

  /**
   * The outcome of a lookup.
   *
   * @param presence how often the name occurs
   * @param value the decoded value when it occurs once ({@code ""} for a name without {@code =});
   *     {@code null} otherwise, and also when the value is not valid percent-encoded UTF-8
   */
  public record Param(Presence presence, String value) {
    static final Param ABSENT = new Param(Presence.ABSENT, null);
    static final Param REPEATED = new Param(Presence.REPEATED, null);
    static final Param UNDECODABLE = new Param(Presence.ONCE, null);
  }

  private FormQuery() {}

  /**
   * Finds {@code name} in {@code rawQuery}, the query string as sent on the wire (still
   * percent-encoded, without the {@code ?}); {@code null} means no query string.
   */
  public static Param lookup(String rawQuery, String name) {
    if (rawQuery == null || rawQuery.isEmpty()) {
      return Param.ABSENT;
    }
    Param found = Param.ABSENT;
    int length = rawQuery.length();
    int start = 0;
    while (start <= length) {
      int end = rawQuery.indexOf('&', start);
      if (end < 0) {
        end = length;
      }
      if (end > start) { // "a&&b": empty pairs are skipped
        int eq = rawQuery.indexOf('=', start);
        if (eq < 0 || eq > end) {
          eq = end;
        }
        if (nameMatches(rawQuery, start, eq, name)) {
          if (found.presence() != Presence.ABSENT) {
            return Param.REPEATED;
          }
          String value = eq < end ? decode(rawQuery, eq + 1, end) : "";
          found = value == null ? Param.UNDECODABLE : new Param(Presence.ONCE, value);
        }
      }
      start = end + 1;
    }
    return found;
  }

  private static boolean nameMatches(String query, int from, int to, String name) {
    if (needsDecoding(query, from, to)) {
      return name.equals(decode(query, from, to));
    }
    return to - from == name.length() && query.startsWith(name, from);
  }

  private static boolean needsDecoding(String s, int from, int to) {
    for (int i = from; i < to; i++) {
      char c = s.charAt(i);
      if (c == '%' || c == '+' || c >= 0x80) {
        return true;
      }
    }
    return false;
  }

  /** The value of an ASCII hex digit, or -1 (Character.digit would accept non-ASCII digits). */
  private static int hexValue(char c) {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    return -1;
  }

  /**
   * Decodes {@code s[from, to)}; returns {@code null} for a malformed {@code %} escape or bytes
   * that are not UTF-8.
   */
  static String decode(String s, int from, int to) {
    if (!needsDecoding(s, from, to)) {
      return s.substring(from, to);
    }
    ByteBuffer bytes = ByteBuffer.allocate((to - from) * 3);
    for (int i = from; i < to; i++) {
      char c = s.charAt(i);
      if (c == '+') {
        bytes.put((byte) ' ');
      } else if (c == '%') {
        int hi = i + 2 < to ? hexValue(s.charAt(i + 1)) : -1;
        int lo = i + 2 < to ? hexValue(s.charAt(i + 2)) : -1;
        if (hi < 0 || lo < 0) {
          return null;
        }
        bytes.put((byte) (hi << 4 | lo));
        i += 2;
      } else if (c < 0x80) {
        bytes.put((byte) c);
      } else {
        // A raw non-ASCII character (servers differ in passing these on): its UTF-8 bytes.
        bytes.put(String.valueOf(c).getBytes(StandardCharsets.UTF_8));
      }
    }
    bytes.flip();
    try {
      CharBuffer chars =
          StandardCharsets.UTF_8
              .newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(bytes);
      return chars.toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }
}
