package serverlab.contract.bench;

import java.nio.file.Path;
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
      Supplier<Reply> request = BenchCases.request(root, args[i]);
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
}
