package serverlab.contract;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.LocalDateTime;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Runs contracts/vectors/workday.json and inputs.json against the shared logic. */
class VectorsTest {

  private static final TradingCalendar CALENDAR = Vectors.calendar();
  private static final Contract CONTRACT = new Contract(Vectors.DISPLAY_NAME, CALENDAR);

  private static Stream<Arguments> cases(JsonNode array, String... fields) {
    return StreamSupport.stream(array.spliterator(), false)
        .map(node -> {
          Object[] values = new Object[fields.length];
          for (int i = 0; i < fields.length; i++) {
            JsonNode field = node.get(fields[i]);
            values[i] = field == null ? null : field.isInt() ? field.asInt() : field.asText();
          }
          return Arguments.of(values);
        });
  }

  static Stream<Arguments> workdayCases() {
    return cases(Vectors.json("workday.json").get("cases"), "at", "expect");
  }

  static Stream<Arguments> validN() {
    return cases(Vectors.json("inputs.json").at("/n/valid"), "raw", "kb");
  }

  static Stream<Arguments> helloN() {
    return cases(Vectors.json("inputs.json").at("/n/hello"), "raw");
  }

  static Stream<Arguments> invalidN() {
    return cases(Vectors.json("inputs.json").at("/n/invalid"), "raw");
  }

  static Stream<Arguments> validAt() {
    return cases(Vectors.json("inputs.json").at("/at/valid"), "raw", "expect");
  }

  static Stream<Arguments> invalidAt() {
    return cases(Vectors.json("inputs.json").at("/at/invalid"), "raw");
  }

  @ParameterizedTest(name = "{0} -> {1}")
  @MethodSource("workdayCases")
  void workdayRule(String at, String expect) {
    LocalDateTime time = Parameters.parseLocalTime(at);
    assertNotNull(time, at);
    assertEquals(expect, CALENDAR.tradingDayOf(time).toString());
  }

  @ParameterizedTest(name = "/workday?at={0} -> {1}")
  @MethodSource("workdayCases")
  void workdayRoute(String at, String expect) {
    Reply reply = CONTRACT.workday("at=" + at);
    assertEquals(200, reply.status());
    assertEquals(expect, reply.text());
  }

  @ParameterizedTest(name = "/?{0} -> {1} KB")
  @MethodSource("validN")
  void validN(String raw, int kb) {
    Reply reply = CONTRACT.root(raw);
    assertEquals(200, reply.status());
    assertEquals(kb * 1000, reply.body().length);
    for (byte b : reply.body()) {
      assertEquals('X', b);
    }
  }

  @ParameterizedTest(name = "/?{0} -> hello")
  @MethodSource("helloN")
  void helloN(String raw) {
    Reply reply = CONTRACT.root(raw.isEmpty() ? null : raw);
    assertEquals(200, reply.status());
    assertTrue(reply.text().startsWith("Hello World, from Test Stack! "), reply.text());
  }

  @ParameterizedTest(name = "/?{0} -> 400")
  @MethodSource("invalidN")
  void invalidN(String raw) {
    Reply reply = CONTRACT.root(raw);
    assertEquals(400, reply.status());
    assertArrayEquals(Reply.BAD_N.body(), reply.body());
    assertEquals("n must be an integer between 1 and 100", reply.text());
  }

  @ParameterizedTest(name = "/workday?{0} -> {1}")
  @MethodSource("validAt")
  void validAt(String raw, String expect) {
    Reply reply = CONTRACT.workday(raw);
    assertEquals(200, reply.status());
    assertEquals(expect, reply.text());
  }

  @ParameterizedTest(name = "/workday?{0} -> 400")
  @MethodSource("invalidAt")
  void invalidAt(String raw) {
    Reply reply = CONTRACT.workday(raw);
    assertEquals(400, reply.status());
    assertEquals("at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]", reply.text());
  }
}
