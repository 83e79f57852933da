package serverlab.contract;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;

/**
 * The two routes of contract v1, independent of any web framework. Thread-safe and
 * allocation-light: the n-KB bodies and error bodies are built once; hello and workday are computed
 * per request.
 */
public final class Contract {

  /** Exchange local time: Asia/Shanghai is a fixed UTC+08:00 (no DST since 1991). */
  public static final ZoneOffset EXCHANGE_OFFSET = ZoneOffset.ofHours(8);

  // UTC, milliseconds always three digits; 'uuuu' is the proleptic year (no era surprises).
  private static final DateTimeFormatter HELLO_TIME =
      DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss.SSS").withZone(ZoneOffset.UTC);

  private final String helloPrefix;
  private final TradingCalendar calendar;
  private final Clock clock;
  private final Reply[] kilobytes; // kilobytes[n]: n x 1000 'X', built once

  /**
   * @param displayName the stack's display name, used verbatim in the hello body
   * @param calendar the trading calendar
   * @param clock the source of "now" (the system UTC clock in production)
   */
  public Contract(String displayName, TradingCalendar calendar, Clock clock) {
    this.helloPrefix = "Hello World, from " + displayName + "! ";
    this.calendar = calendar;
    this.clock = clock;
    this.kilobytes = new Reply[Parameters.MAX_KB + 1];
    for (int n = 1; n <= Parameters.MAX_KB; n++) {
      byte[] body = new byte[n * 1000];
      Arrays.fill(body, (byte) 'X');
      kilobytes[n] = new Reply(200, body);
    }
  }

  public Contract(String displayName, TradingCalendar calendar) {
    this(displayName, calendar, Clock.systemUTC());
  }

  /** {@code GET /}: hello without {@code n} or with an empty one, else an n-KB body or 400. */
  public Reply root(String rawQuery) {
    FormQuery.Param n = FormQuery.lookup(rawQuery, "n");
    return switch (n.presence()) {
      case ABSENT -> hello();
      case REPEATED -> Reply.BAD_N;
      case ONCE -> {
        if ("".equals(n.value())) {
          yield hello();
        }
        int kb = Parameters.parseKilobytes(n.value());
        yield kb == 0 ? Reply.BAD_N : kilobytes[kb];
      }
    };
  }

  /** {@code GET /workday}: the trading day of {@code at}, or of now without it; else 400. */
  public Reply workday(String rawQuery) {
    FormQuery.Param at = FormQuery.lookup(rawQuery, "at");
    LocalDateTime time =
        switch (at.presence()) {
          case ABSENT ->
              LocalDateTime.ofInstant(clock.instant(), EXCHANGE_OFFSET)
                  .truncatedTo(ChronoUnit.SECONDS);
          case REPEATED -> null;
          case ONCE -> Parameters.parseLocalTime(at.value());
        };
    return time == null ? Reply.BAD_AT : ok(calendar.tradingDayOf(time).toString());
  }

  /** The hello body for the current time; never cached. */
  public Reply hello() {
    return ok(helloPrefix + HELLO_TIME.format(clock.instant()));
  }

  private static Reply ok(String text) {
    return new Reply(200, text.getBytes(StandardCharsets.US_ASCII));
  }
}
