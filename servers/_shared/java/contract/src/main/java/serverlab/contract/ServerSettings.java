package serverlab.contract;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/**
 * Start-up configuration shared by every JVM stack, read once from the environment. {@code PORT}
 * and {@code HOST} are left to each framework's own configuration.
 *
 * @param workers the number of event loops or workers ({@code WORKERS})
 * @param contract the contract logic over the calendar named by {@code WORKDAY_CALENDAR}
 */
public record ServerSettings(int workers, Contract contract) {

  public static final String WORKERS = "WORKERS";
  public static final String WORKDAY_CALENDAR = "WORKDAY_CALENDAR";

  /** A setting is missing or wrong; the message names the variable and says what to do. */
  public static final class InvalidSettingException extends Exception {
    public InvalidSettingException(String message) {
      super(message);
    }
  }

  /** Reads the settings from the process environment. */
  public static ServerSettings fromEnvironment(String displayName) throws InvalidSettingException {
    return fromEnvironment(displayName, System.getenv());
  }

  /**
   * For {@code main}: reads the settings, or prints why they are wrong and exits with status 2
   * before the framework starts, so a misconfiguration gives one clear line, not a stack trace.
   */
  public static ServerSettings fromEnvironmentOrExit(String displayName) {
    try {
      return fromEnvironment(displayName);
    } catch (InvalidSettingException e) {
      System.err.println("error: " + e.getMessage());
      System.exit(2);
      throw new AssertionError("unreachable");
    }
  }

  static ServerSettings fromEnvironment(String displayName, Map<String, String> env)
      throws InvalidSettingException {
    int workers = workers(env.get(WORKERS));
    TradingCalendar calendar = calendar(env.get(WORKDAY_CALENDAR));
    return new ServerSettings(workers, new Contract(displayName, calendar));
  }

  /**
   * {@code WORKERS}, a positive integer; unset or empty means the CPUs available to the process.
   * {@link Runtime#availableProcessors()} is container-aware: it honours the cgroup CPU quota and
   * the cpuset/affinity mask.
   */
  static int workers(String value) throws InvalidSettingException {
    if (value == null || value.isEmpty()) {
      return Runtime.getRuntime().availableProcessors();
    }
    int workers = 0;
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < '0' || c > '9' || i >= 4) {
        workers = 0;
        break;
      }
      workers = workers * 10 + (c - '0');
    }
    if (workers < 1 || workers > 1024) {
      throw new InvalidSettingException(
          WORKERS + "='" + value + "' must be an integer from 1 to 1024 (or unset: the CPU count)");
    }
    return workers;
  }

  static TradingCalendar calendar(String path) throws InvalidSettingException {
    if (path == null || path.isEmpty()) {
      throw new InvalidSettingException(
          WORKDAY_CALENDAR
              + " is not set: it must name the trading calendar file"
              + " (contracts/calendar/xshg-non-trading-weekdays.txt)");
    }
    try {
      return TradingCalendar.load(Path.of(path));
    } catch (IOException | RuntimeException e) {
      throw new InvalidSettingException(
          WORKDAY_CALENDAR + "=" + path + ": cannot read the trading calendar: " + e);
    }
  }
}
