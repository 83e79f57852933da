package serverlab.contract;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.DayOfWeek;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;

/**
 * Trading days of the Shanghai Stock Exchange and the workday rule.
 *
 * <p>Built once at start-up from the calendar file (comment lines starting with {@code #}, one of
 * them {@code # range: FIRST LAST}, then one non-trading weekday {@code YYYY-MM-DD} a line), so
 * that requests never touch the file system. A trading day is Monday to Friday and not listed;
 * outside the file's range only weekends are non-trading.
 */
public final class TradingCalendar {

  /** The daily close: a time up to and including it belongs to that trading day. */
  public static final LocalTime CLOSE = LocalTime.of(15, 0);

  private static final String RANGE_PREFIX = "# range:";

  private final long firstDay;
  private final long lastDay;
  // closed[d - firstDay] for every epoch day d in the range: a flat array beats a hash lookup.
  private final boolean[] closed;
  // onOrAfter[d - firstDay]: the first trading day on or after epoch day d, for every d in the
  // range, computed once with the rule itself: a request reads it instead of stepping a LocalDate
  // through holidays and weekends.
  private final long[] onOrAfter;

  private TradingCalendar(LocalDate first, LocalDate last, List<LocalDate> closedDays) {
    this.firstDay = first.toEpochDay();
    this.lastDay = last.toEpochDay();
    this.closed = new boolean[Math.toIntExact(lastDay - firstDay + 1)];
    for (LocalDate day : closedDays) {
      closed[(int) (day.toEpochDay() - firstDay)] = true;
    }
    this.onOrAfter = new long[closed.length];
    long next = firstTradingDayOnOrAfter(lastDay + 1);
    for (int i = closed.length - 1; i >= 0; i--) {
      long day = firstDay + i;
      next = isTradingDay(LocalDate.ofEpochDay(day)) ? day : next;
      onOrAfter[i] = next;
    }
  }

  /** The rule's loop: the first trading day on or after epoch day {@code day}. */
  private long firstTradingDayOnOrAfter(long day) {
    LocalDate candidate = LocalDate.ofEpochDay(day);
    while (!isTradingDay(candidate)) {
      candidate = candidate.plusDays(1);
    }
    return candidate.toEpochDay();
  }

  /** The first day the file knows about (its {@code # range:}). */
  public LocalDate first() {
    return LocalDate.ofEpochDay(firstDay);
  }

  /** The last day the file knows about (its {@code # range:}). */
  public LocalDate last() {
    return LocalDate.ofEpochDay(lastDay);
  }

  /** Reads the calendar file at {@code path}. */
  public static TradingCalendar load(Path path) throws IOException {
    return parse(Files.readAllLines(path, StandardCharsets.UTF_8));
  }

  /**
   * Parses the lines of a calendar file.
   *
   * @throws IllegalArgumentException naming the first line that breaks the format
   */
  public static TradingCalendar parse(List<String> lines) {
    LocalDate first = null;
    LocalDate last = null;
    List<LocalDate> closedDays = new ArrayList<>();
    int number = 0;
    for (String line : lines) {
      number++;
      String text = line.strip();
      if (text.startsWith(RANGE_PREFIX)) {
        String[] bounds = text.substring(RANGE_PREFIX.length()).strip().split("\\s+");
        if (bounds.length != 2) {
          throw new IllegalArgumentException("line " + number + ": expected '# range: FIRST LAST'");
        }
        first = date(bounds[0], number);
        last = date(bounds[1], number);
        if (last.isBefore(first)) {
          throw new IllegalArgumentException("line " + number + ": range ends before it starts");
        }
      } else if (!text.isEmpty() && !text.startsWith("#")) {
        closedDays.add(date(text, number));
      }
    }
    if (first == null) {
      throw new IllegalArgumentException("no '# range: FIRST LAST' line");
    }
    for (LocalDate day : closedDays) {
      if (day.isBefore(first) || day.isAfter(last)) {
        throw new IllegalArgumentException(day + " lies outside the range " + first + " " + last);
      }
    }
    return new TradingCalendar(first, last, closedDays);
  }

  private static LocalDate date(String text, int line) {
    try {
      return LocalDate.parse(text); // ISO yyyy-MM-dd, strict
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException("line " + line + ": not a YYYY-MM-DD date: " + text, e);
    }
  }

  /** Whether the exchange trades on {@code day}. */
  public boolean isTradingDay(LocalDate day) {
    DayOfWeek weekday = day.getDayOfWeek();
    if (weekday == DayOfWeek.SATURDAY || weekday == DayOfWeek.SUNDAY) {
      return false;
    }
    long epochDay = day.toEpochDay();
    return epochDay < firstDay || epochDay > lastDay || !closed[(int) (epochDay - firstDay)];
  }

  /**
   * The trading day that exchange-local time {@code time} belongs to: its own date if that is a
   * trading day and {@code time} is at or before the close, else the next trading day.
   */
  public LocalDate tradingDayOf(LocalDateTime time) {
    return LocalDate.ofEpochDay(tradingEpochDayOf(time));
  }

  /** {@link #tradingDayOf} as an epoch day, without a LocalDate. */
  public long tradingEpochDayOf(LocalDateTime time) {
    // Its own date if that trades and the time is not after the close, else the next trading day:
    // either way the first trading day on or after the date, or on or after the day after it.
    long day = time.toLocalDate().toEpochDay();
    long from = time.toLocalTime().isAfter(CLOSE) ? day + 1 : day;
    if (from >= firstDay && from <= lastDay) {
      return onOrAfter[(int) (from - firstDay)];
    }
    return firstTradingDayOnOrAfter(from);
  }
}
