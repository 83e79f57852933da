package serverlab.contract.bench;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;
import serverlab.contract.Contract;
import serverlab.contract.Reply;
import serverlab.contract.TradingCalendar;

/**
 * The routes and inputs of servers/_shared/microbench-cases.json, which every language's contract
 * microbenchmark reads.
 */
final class BenchCases {

  /** The system property that carries the repository root into JMH's forked JVMs. */
  static final String ROOT_PROPERTY = "serverlab.root";

  private static final String CASES_FILE = "servers/_shared/microbench-cases.json";

  /** One request: {@code query} is the raw query string, as sent. */
  @JsonIgnoreProperties(ignoreUnknown = true)
  record BenchCase(String name, String method, String path, String query, int status) {

    /** The library answers GET on its two routes; routing, 404, 405 and HEAD are each stack's. */
    boolean isRoute() {
      return "GET".equals(method) && ("/".equals(path) || "/workday".equals(path));
    }
  }

  @JsonIgnoreProperties(ignoreUnknown = true)
  private record CasesFile(List<BenchCase> cases, @JsonProperty("held_at_ms") Long heldAtMs) {}

  private BenchCases() {}

  /**
   * The repository's root: the {@value #ROOT_PROPERTY} property, else the working directory
   * (scripts/microbench.sh runs from the root).
   */
  static Path repoRoot() {
    Path root = Path.of(System.getProperty(ROOT_PROPERTY, "")).toAbsolutePath();
    if (!Files.isRegularFile(root.resolve(CASES_FILE))) {
      throw new IllegalStateException("no " + CASES_FILE + " in " + root + ": run from the root");
    }
    return root;
  }

  static Path calendarFile(Path root) {
    return root.resolve("contracts/calendar/xshg-non-trading-weekdays.txt");
  }

  /**
   * One request of the case named {@code name} through {@link Contract#root} or {@link
   * Contract#workday}, as the Spring stacks call them with the raw query string, the system clock
   * included; answered once here and checked against the case's status.
   */
  static Supplier<Reply> request(Path root, String name) throws IOException {
    return request(root, name, Clock.systemUTC());
  }

  /** The same, the library reading {@code clock}. */
  static Supplier<Reply> request(Path root, String name, Clock clock) throws IOException {
    BenchCase benchCase =
        routeCases(root).stream()
            .filter(c -> c.name().equals(name))
            .findFirst()
            .orElseThrow(() -> new IllegalArgumentException("no GET case named " + name));
    Contract contract =
        new Contract("Java Spring", TradingCalendar.load(calendarFile(root)), clock);
    Function<String, Reply> route =
        "/workday".equals(benchCase.path()) ? contract::workday : contract::root;
    String query = benchCase.query();
    int status = route.apply(query).status();
    if (status != benchCase.status()) {
      throw new IllegalStateException(
          name + ": status " + status + ", expected " + benchCase.status());
    }
    return () -> route.apply(query);
  }

  /** The cases this library answers, in the file's order. */
  static List<BenchCase> routeCases(Path root) throws IOException {
    return casesFile(root).cases().stream().filter(BenchCase::isRoute).toList();
  }

  /**
   * The instant of the file's {@code held_at_ms}, which {@link CountSteps} hands the library as the
   * time of every request.
   */
  static Instant heldAt(Path root) throws IOException {
    Long heldAtMs = casesFile(root).heldAtMs();
    if (heldAtMs == null) {
      throw new IllegalStateException(CASES_FILE + " has no held_at_ms");
    }
    return Instant.ofEpochMilli(heldAtMs);
  }

  private static CasesFile casesFile(Path root) throws IOException {
    return new ObjectMapper().readValue(root.resolve(CASES_FILE).toFile(), CasesFile.class);
  }
}
