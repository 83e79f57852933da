package serverlab.contract.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.function.Supplier;
import serverlab.contract.Reply;

/**
 * The step program scripts/count_instructions.py (make instructions) runs under valgrind's
 * callgrind to count the instructions of one request of a case ({@link BenchCases#request}, what
 * {@link ContractBench} times). Before each of three steps (200,000 requests of warm-up, so that
 * C2 has compiled the path; no request; N requests) it asks {@link Runtime#availableProcessors},
 * whose native side, {@code JVM_ActiveProcessorCount}, is the function callgrind dumps before;
 * then it prints the case's name. (N requests - none) / N is one request's instructions.
 *
 * <pre>java -Xbatch -cp contract-bench.jar serverlab.contract.bench.CountSteps [--calls N] CASE</pre>
 *
 * <p>One case a process, as JMH forks one per case: the JIT compiles for the inputs it has seen.
 * {@code -Xbatch} makes the counted thread wait for each compilation, so that when code is
 * installed does not depend on the scheduler; a collection before each step keeps one from
 * landing in one step and not the other. Run from the repository's root.
 *
 * <p>The library reads a {@link HeldClock}: the system clock is read on every request, as the
 * stacks do, but one instant, the same on every day, is answered: the instant in
 * microbench-cases.json ({@code held_at_ms}), read once at start. The cost of formatting a time
 * depends on its digits, and the hello text up to its seconds is formatted once a second: with the
 * live clock that formatting was spread over however many requests a second the host ran under
 * callgrind, a share that moved with the host's speed (hello moved 8.5% between two days).
 */
public final class CountSteps {

  private static final int WARMUP_CALLS = 200_000;

  private CountSteps() {}

  public static void main(String[] args) throws Exception {
    int calls = 2000;
    int first = 0;
    if (args.length > 1 && args[0].equals("--calls")) {
      calls = Integer.parseInt(args[1]);
      first = 2;
    }
    Path root = BenchCases.repoRoot();
    for (int i = first; i < args.length; i++) {
      Supplier<Reply> request = BenchCases.request(root, args[i], new HeldClock());
      for (int n : new int[] {WARMUP_CALLS, 0, calls}) {
        step(request, n);
      }
      System.out.println(args[i]);
    }
    marker();
  }

  private static void step(Supplier<Reply> request, int calls) {
    System.gc();
    marker();
    int sink = 0;
    for (int i = 0; i < calls; i++) {
      sink += request.get().status();
    }
    if (calls > 0 && sink == 0) {
      throw new IllegalStateException("no request answered");
    }
  }

  private static void marker() {
    Runtime.getRuntime().availableProcessors();
  }

  /**
   * The system clock read on every call, the instant in microbench-cases.json answered. A static
   * final, read once when the class is initialised: a constant to the JIT.
   */
  static final class HeldClock extends Clock {
    private static final Clock SYSTEM = Clock.systemUTC();
    private static final Instant HELD;
    private static volatile long lastRead;

    static {
      try {
        HELD = BenchCases.heldAt(BenchCases.repoRoot());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      throw new UnsupportedOperationException("a held UTC clock");
    }

    @Override
    public long millis() {
      lastRead = SYSTEM.millis();
      return HELD.toEpochMilli();
    }

    @Override
    public Instant instant() {
      lastRead = SYSTEM.instant().getNano();
      return HELD;
    }
  }
}
