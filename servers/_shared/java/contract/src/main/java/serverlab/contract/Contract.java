package serverlab.contract;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;

/**
 * The two routes of contract v1, independent of any web framework. Thread-safe and
 * allocation-light: the n-KB bodies, the error bodies and the workday answers of the calendar's
 * range are built once; the trading day is read from the calendar's table, and hello formats its
 * text up to the seconds once a second and its milliseconds per request.
 */
public final class Contract {

  /** Exchange local time: Asia/Shanghai is a fixed UTC+08:00 (no DST since 1991). */
  public static final ZoneOffset EXCHANGE_OFFSET = ZoneOffset.ofHours(8);

  // UTC up to the seconds ('uuuu' is the proleptic year: no era surprises); the milliseconds,
  // always three digits, are appended per request.
  private static final DateTimeFormatter HELLO_SECONDS =
      DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss.").withZone(ZoneOffset.UTC);

  // Days past the calendar's range whose workday answers are built at start-up too: the trading
  // day of a time near the range's end can lie after it.
  private static final int DAYS_PAST_RANGE = 31;

  /** The hello text up to the milliseconds, as bytes, for the second it was formatted for. */
  private record HelloSecond(long epochSecond, byte[] upToMillis) {}

  private final String helloPrefix;
  private final TradingCalendar calendar;
  private final Clock clock;
  private final Reply[] kilobytes; // kilobytes[n]: n x 1000 'X', built once
  private final long firstAnswerDay;
  private final Reply[] dayReplies; // dayReplies[d - firstAnswerDay]: "YYYY-MM-DD" of epoch day d
  // Replaced once a second. Its fields are final, so a thread that reads it sees it whole without
  // a lock; one that reads an older one formats the second again.
  private HelloSecond helloSecond = new HelloSecond(Long.MIN_VALUE, new byte[0]);

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
    this.firstAnswerDay = calendar.first().toEpochDay();
    long lastAnswerDay = calendar.last().toEpochDay() + DAYS_PAST_RANGE;
    this.dayReplies = new Reply[Math.toIntExact(lastAnswerDay - firstAnswerDay + 1)];
    for (int i = 0; i < dayReplies.length; i++) {
      dayReplies[i] = ok(LocalDate.ofEpochDay(firstAnswerDay + i).toString());
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
    return time == null ? Reply.BAD_AT : dayReply(calendar.tradingEpochDayOf(time));
  }

  /**
   * The answer naming {@code day}: built at start-up for the calendar's range (the same bytes,
   * without a String, a byte array and a Reply per request), built here outside it.
   */
  private Reply dayReply(long epochDay) {
    long index = epochDay - firstAnswerDay;
    if (index >= 0 && index < dayReplies.length) {
      return dayReplies[(int) index];
    }
    return ok(LocalDate.ofEpochDay(epochDay).toString());
  }

  /**
   * The hello body for the current time, read at every call. Everything up to the milliseconds
   * changes once a second, so it is formatted once a second (like a Date header) and only the
   * three millisecond digits are written per request: a DateTimeFormatter per request was most of
   * hello's cost.
   */
  public Reply hello() {
    long epochMilli = clock.millis();
    long epochSecond = Math.floorDiv(epochMilli, 1000);
    int millis = (int) Math.floorMod(epochMilli, 1000);
    HelloSecond current = helloSecond; // one read: other threads may replace it meanwhile
    if (current.epochSecond() != epochSecond) {
      current = formatSecond(epochSecond);
    }
    byte[] upToMillis = current.upToMillis();
    byte[] body = Arrays.copyOf(upToMillis, upToMillis.length + 3);
    body[upToMillis.length] = (byte) ('0' + millis / 100);
    body[upToMillis.length + 1] = (byte) ('0' + millis / 10 % 10);
    body[upToMillis.length + 2] = (byte) ('0' + millis % 10);
    return new Reply(200, body);
  }

  private HelloSecond formatSecond(long epochSecond) {
    String text = helloPrefix + HELLO_SECONDS.format(Instant.ofEpochSecond(epochSecond));
    HelloSecond formatted = new HelloSecond(epochSecond, text.getBytes(StandardCharsets.US_ASCII));
    helloSecond = formatted;
    return formatted;
  }

  private static Reply ok(String text) {
    return new Reply(200, text.getBytes(StandardCharsets.US_ASCII));
  }
}
