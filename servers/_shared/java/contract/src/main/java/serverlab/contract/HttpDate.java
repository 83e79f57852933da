package serverlab.contract;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

/**
 * The {@code Date} header value (IMF-fixdate) for servers that do not add one themselves, formatted
 * at most once per second and shared by all threads, as Tomcat and Netty-based servers commonly do.
 */
public final class HttpDate {

  private static final DateTimeFormatter IMF_FIXDATE =
      DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US)
          .withZone(ZoneOffset.UTC);

  /** An immutable pair, so one volatile read sees a consistent second and text. */
  private record Stamp(long second, String text) {}

  private static volatile Stamp current = new Stamp(Long.MIN_VALUE, "");

  private HttpDate() {}

  /** The current time as an IMF-fixdate, e.g. {@code Sun, 06 Nov 1994 08:49:37 GMT}. */
  public static String now() {
    long second = Math.floorDiv(System.currentTimeMillis(), 1000);
    Stamp stamp = current;
    if (stamp.second() != second) {
      stamp = new Stamp(second, format(second));
      current = stamp; // a race only formats the same second twice
    }
    return stamp.text();
  }

  static String format(long epochSecond) {
    return IMF_FIXDATE.format(Instant.ofEpochSecond(epochSecond));
  }
}
