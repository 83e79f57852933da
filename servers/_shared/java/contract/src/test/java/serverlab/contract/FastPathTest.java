package serverlab.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.time.Clock;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The per-request shortcuts of {@link Contract} and {@link TradingCalendar} give the bytes the
 * general path gave: hello formatted whole with a DateTimeFormatter at every call, the workday
 * answer as the {@code toString()} of the trading day found by stepping through the days.
 */
class FastPathTest {

  private static final TradingCalendar CALENDAR = Vectors.calendar();
  private static final String NAME = "Fast Path Stack";
  // The hello time as Contract formatted it for every request before it kept the seconds.
  private static final DateTimeFormatter WHOLE_HELLO_TIME =
      DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss.SSS").withZone(ZoneOffset.UTC);

  /** A clock the test moves; Contract reads it once per hello. */
  private static final class SettableClock extends Clock {
    private Instant now = Instant.EPOCH;

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Instant instant() {
      return now;
    }
  }

  private static List<Instant> helloInstants() {
    List<Instant> instants = new ArrayList<>();
    for (long ms : new long[] {0, 999, 1000, 1_557_021_600_090L, 4_102_444_799_999L, -1, -1001}) {
      instants.add(Instant.ofEpochMilli(ms));
    }
    long start = 1_767_225_599_000L; // 2025-12-31 23:59:59.000 UTC: seconds, days and years roll over
    for (long step = 0; step < 2500; step += 7) {
      instants.add(Instant.ofEpochMilli(start + step));
    }
    Random random = new Random(41);
    for (int i = 0; i < 2000; i++) {
      instants.add(Instant.ofEpochMilli((long) (random.nextDouble() * 253_402_300_799_999L)));
    }
    instants.add(Instant.parse("2026-12-31T23:59:59.007999Z"));
    List<Instant> backwards = new ArrayList<>(instants);
    Collections.reverse(backwards); // the per-second text must follow the clock back too
    instants.addAll(backwards);
    return instants;
  }

  @Test
  void helloAgreesWithFormattingEveryCall() {
    SettableClock clock = new SettableClock();
    Contract contract = new Contract(NAME, CALENDAR, clock);
    for (Instant instant : helloInstants()) {
      clock.now = instant;
      String expected = "Hello World, from " + NAME + "! " + WHOLE_HELLO_TIME.format(instant);
      assertEquals(expected, contract.hello().text(), instant.toString());
    }
  }

  /** The workday rule stepped day by day, as TradingCalendar did per request before its table. */
  private static LocalDate ruleTradingDay(LocalDateTime time) {
    LocalDate day = time.toLocalDate();
    if (CALENDAR.isTradingDay(day) && !time.toLocalTime().isAfter(TradingCalendar.CLOSE)) {
      return day;
    }
    do {
      day = day.plusDays(1);
    } while (!CALENDAR.isTradingDay(day));
    return day;
  }

  @Test
  void workdayAnswersAgreeWithTheRuleSteppedDayByDay() {
    Contract contract = new Contract(NAME, CALENDAR);
    LocalDate first = CALENDAR.first().minusDays(400);
    LocalDate last = CALENDAR.last().plusDays(400);
    LocalTime[] times = {LocalTime.MIDNIGHT, LocalTime.of(9, 30), LocalTime.of(15, 0),
        LocalTime.of(15, 0, 1), LocalTime.of(23, 59, 59)};
    for (LocalDate day = first; !day.isAfter(last); day = day.plusDays(1)) {
      for (LocalTime time : times) {
        LocalDateTime at = LocalDateTime.of(day, time);
        String query = "at=" + at.toLocalDate() + "T" + time.toString().substring(0, 5)
            + (time.getSecond() == 0 ? "" : ":" + String.format("%02d", time.getSecond()));
        String expected = ruleTradingDay(at).toString();
        assertEquals(expected, CALENDAR.tradingDayOf(at).toString(), query);
        assertEquals(expected, contract.workday(query).text(), query);
      }
    }
  }

  @Test
  void workdayAnswersInTheRangeAreBuiltOnce() {
    Contract contract = new Contract(NAME, CALENDAR);
    assertSame(contract.workday("at=2019-05-05T10:00"), contract.workday("at=2019-05-06T09:00"));
  }
}
