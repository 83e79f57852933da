package serverlab.contract;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The repository's shared test data, found from the module folder upwards. */
final class Vectors {

  static final String DISPLAY_NAME = "Test Stack";

  private Vectors() {}

  /** The nearest folder above the working directory that holds {@code contracts/}. */
  static Path repoRoot() {
    for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
      if (Files.isDirectory(dir.resolve("contracts/vectors"))) {
        return dir;
      }
    }
    throw new IllegalStateException("no contracts/ folder above " + Path.of("").toAbsolutePath());
  }

  static Path calendarFile() {
    return repoRoot().resolve("contracts/calendar/xshg-non-trading-weekdays.txt");
  }

  static TradingCalendar calendar() {
    try {
      return TradingCalendar.load(calendarFile());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static JsonNode json(String name) {
    try {
      return new ObjectMapper()
          .readTree(repoRoot().resolve("contracts/vectors").resolve(name).toFile());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
