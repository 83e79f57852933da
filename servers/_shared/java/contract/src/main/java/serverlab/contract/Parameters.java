package serverlab.contract;

import java.time.LocalDateTime;
import java.time.YearMonth;

/**
 * Strict parsers for the decoded values of {@code n} and {@code at}. Only ASCII digits count as
 * digits: {@link Character#isDigit} and {@link Integer#parseInt} accept other scripts' digits,
 * signs and more, so neither is used.
 */
public final class Parameters {

  /** The largest body, in kilobytes. */
  public static final int MAX_KB = 100;

  private static final int MIN_YEAR = 1970;
  private static final int MAX_YEAR = 2199;

  private Parameters() {}

  /**
   * The value of {@code n}: 1 to 3 ASCII digits with a value from 1 to {@value #MAX_KB}.
   *
   * @return the number of kilobytes, or 0 if {@code value} is null or not such a number
   */
  public static int parseKilobytes(String value) {
    if (value == null || value.isEmpty() || value.length() > 3) {
      return 0;
    }
    int kb = digits(value, 0, value.length());
    return kb >= 1 && kb <= MAX_KB ? kb : 0;
  }

  /**
   * The value of {@code at}: exactly {@code YYYY-MM-DDTHH:MM} or {@code YYYY-MM-DDTHH:MM:SS}, a
   * real date with year 1970 to 2199, hour 0 to 23, minute and second 0 to 59.
   *
   * @return the local time, or null if {@code value} is null or not such a time
   */
  public static LocalDateTime parseLocalTime(String value) {
    if (value == null) {
      return null;
    }
    int length = value.length();
    if (length != 16 && length != 19) {
      return null;
    }
    if (value.charAt(4) != '-'
        || value.charAt(7) != '-'
        || value.charAt(10) != 'T'
        || value.charAt(13) != ':'
        || (length == 19 && value.charAt(16) != ':')) {
      return null;
    }
    int year = digits(value, 0, 4);
    int month = digits(value, 5, 7);
    int day = digits(value, 8, 10);
    int hour = digits(value, 11, 13);
    int minute = digits(value, 14, 16);
    int second = length == 19 ? digits(value, 17, 19) : 0;
    if (year < MIN_YEAR
        || year > MAX_YEAR
        || month < 1
        || month > 12
        || day < 1
        || day > YearMonth.of(year, month).lengthOfMonth()
        || hour < 0
        || hour > 23
        || minute < 0
        || minute > 59
        || second < 0
        || second > 59) {
      return null;
    }
    return LocalDateTime.of(year, month, day, hour, minute, second);
  }

  /** The value of the ASCII digits {@code s[from, to)}, or -1 if any other character is there. */
  private static int digits(String s, int from, int to) {
    int value = 0;
    for (int i = from; i < to; i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      value = value * 10 + (c - '0');
    }
    return value;
  }
}
