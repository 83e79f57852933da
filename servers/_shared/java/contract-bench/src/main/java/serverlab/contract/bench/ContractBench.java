package serverlab.contract.bench;

import java.io.IOException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import serverlab.contract.Reply;

/**
 * One request of one case ({@link BenchCases#request}) through the contract, as the Spring
 * stacks call them with the raw query string, the system clock included. Each case runs in its own
 * fork, so the JIT sees one route and one input, as under a load of that case.
 *
 * <p>The defaults (1 fork, 3 x 1 s warm-up, 5 x 1 s measured) keep a run of every case under two
 * minutes; JMH's options on the command line override them.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class ContractBench {

  /** The case's name; {@link ContractBenchMain} passes every GET case of the shared file. */
  @Param({"hello"})
  public String name;

  private Supplier<Reply> request;

  @Setup
  public void setUp() throws IOException {
    request = BenchCases.request(BenchCases.repoRoot(), name);
  }

  @Benchmark
  public Reply request() {
    return request.get();
  }
}
