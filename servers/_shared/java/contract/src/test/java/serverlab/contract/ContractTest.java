package serverlab.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Edge cases of the shared logic beyond the vectors. */
class ContractTest {

  private static final TradingCalendar CALENDAR = Vectors.calendar();

  private static Contract at(String instant) {
    return new Contract(
        "Spring Test", CALENDAR, Clock.fixed(Instant.parse(instant), ZoneOffset.UTC));
  }

  @Test
  void helloIsUtcWithThreeDigitMilliseconds() {
    assertEquals(
        "Hello World, from Spring Test! 2019-05-05 02:00:00.000",
        at("2019-05-05T02:00:00Z").hello().text());
    assertEquals(
        "Hello World, from Spring Test! 2026-12-31 23:59:59.007",
        at("2026-12-31T23:59:59.007999Z").root("").text());
  }

  @Test
  void helloIsFreshEachRequest() {
    Contract contract = new Contract("Spring Test", CALENDAR);
    assertNotSame(contract.root(null), contract.root(null));
  }

  @Test
  void kilobyteBodiesAreBuiltOnce() {
    Contract contract = at("2019-05-05T02:00:00Z");
    assertSame(contract.root("n=7"), contract.root("n=007"));
    assertEquals(100_000, contract.root("n=100").body().length);
  }

  @Test
  void workdayNowUsesShanghaiTimeInWholeSeconds() {
    // 07:00:00.999 UTC is 15:00:00.999 in Shanghai: whole seconds make it 15:00:00, the close.
    assertEquals("2019-04-30", at("2019-04-30T07:00:00.999Z").workday(null).text());
    assertEquals("2019-05-06", at("2019-04-30T07:00:01Z").workday(null).text());
    // 16:30 UTC on Sunday is 00:30 on Monday in Shanghai.
    assertEquals("2019-05-06", at("2019-05-05T16:30:00Z").workday("n=5").text());
  }

  @Test
  void outsideTheCalendarRangeOnlyWeekendsAreClosed() {
    assertTrue(CALENDAR.isTradingDay(LocalDate.of(2027, 1, 1))); // a Friday after the range
    assertFalse(CALENDAR.isTradingDay(LocalDate.of(2027, 1, 2)));
    assertEquals(
        LocalDate.of(2200, 1, 1),
        CALENDAR.tradingDayOf(Parameters.parseLocalTime("2199-12-31T15:00:01")));
  }

  @Test
  void queryDecoding() {
    assertEquals(FormQuery.Presence.ABSENT, FormQuery.lookup(null, "n").presence());
    assertEquals(FormQuery.Presence.ABSENT, FormQuery.lookup("nn=1&=n&N=1", "n").presence());
    assertEquals("", FormQuery.lookup("n", "n").value());
    assertEquals("a b", FormQuery.lookup("x=%ZZ&n=a+b", "n").value());
    assertEquals("1=2", FormQuery.lookup("%6E=1=2", "n").value());
    assertEquals(FormQuery.Presence.REPEATED, FormQuery.lookup("n&%6e=", "n").presence());
    assertEquals("\u00e9", FormQuery.lookup("n=%C3%A9", "n").value());
    assertNull(FormQuery.lookup("n=%C3", "n").value());
    assertNull(FormQuery.lookup("n=%", "n").value());
    assertNull(FormQuery.lookup("n=%4", "n").value());
    assertNull(FormQuery.lookup("n=%\uff14\uff11", "n").value());
    assertEquals(FormQuery.Presence.ONCE, FormQuery.lookup("&&n=1&&", "n").presence());
  }

  @ParameterizedTest
  @ValueSource(strings = {"1", "1.0", " 1", "+1", "\u0661", "\uff11", "1000", "0", "101"})
  void kilobytesAreStrict(String value) {
    int kb = Parameters.parseKilobytes(value);
    assertEquals(value.equals("1") ? 1 : 0, kb);
  }

  @Test
  void httpDateIsImfFixdate() {
    assertEquals("Sun, 06 Nov 1994 08:49:37 GMT", HttpDate.format(784111777L));
    assertTrue(HttpDate.now().endsWith(" GMT"));
  }

  @Test
  void workersDefaultToTheCpuCount() throws Exception {
    assertEquals(Runtime.getRuntime().availableProcessors(), ServerSettings.workers(null));
    assertEquals(Runtime.getRuntime().availableProcessors(), ServerSettings.workers(""));
    assertEquals(3, ServerSettings.workers("3"));
    for (String bad : List.of("0", "-1", "two", "\u0663", "99999", " 2")) {
      assertThrows(ServerSettings.InvalidSettingException.class, () -> ServerSettings.workers(bad));
    }
  }

  @Test
  void calendarErrorsNameTheVariableAndPath(@TempDir Path dir) {
    var unset =
        assertThrows(
            ServerSettings.InvalidSettingException.class,
            () -> ServerSettings.fromEnvironment("X", Map.of()));
    assertTrue(unset.getMessage().startsWith("WORKDAY_CALENDAR is not set"), unset.getMessage());
    String missing = dir.resolve("missing.txt").toString();
    var unreadable =
        assertThrows(
            ServerSettings.InvalidSettingException.class,
            () -> ServerSettings.fromEnvironment("X", Map.of("WORKDAY_CALENDAR", missing)));
    assertTrue(
        unreadable.getMessage().startsWith("WORKDAY_CALENDAR=" + missing), unreadable.getMessage());
  }

  @Test
  void calendarFormatIsChecked() {
    assertThrows(
        IllegalArgumentException.class, () -> TradingCalendar.parse(List.of("2019-05-01")));
    assertThrows(
        IllegalArgumentException.class,
        () -> TradingCalendar.parse(List.of("# range: 2019-01-01 2019-12-31", "2019-5-1")));
    assertThrows(
        IllegalArgumentException.class,
        () -> TradingCalendar.parse(List.of("# range: 2019-01-01 2019-12-31", "2020-01-01")));
    TradingCalendar calendar =
        TradingCalendar.parse(
            List.of("# comment", "# range: 2019-01-01 2019-12-31", "", "2019-05-01"));
    assertFalse(calendar.isTradingDay(LocalDate.of(2019, 5, 1)));
    assertTrue(calendar.isTradingDay(LocalDate.of(2019, 5, 2)));
  }
}
