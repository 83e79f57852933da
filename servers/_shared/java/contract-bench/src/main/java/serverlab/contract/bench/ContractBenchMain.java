package serverlab.contract.bench;

import java.nio.file.Path;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * Runs {@link ContractBench} for every GET case of servers/_shared/microbench-cases.json (so the
 * list of inputs lives in one file for all languages), with any JMH option given on the command
 * line ({@code -rf json -rff out.json}, {@code -i 10}, ...). Run from the repository's root.
 */
public final class ContractBenchMain {

  private ContractBenchMain() {}

  public static void main(String[] args) throws Exception {
    Path root = BenchCases.repoRoot();
    String[] names =
        BenchCases.routeCases(root).stream().map(BenchCases.BenchCase::name).toArray(String[]::new);
    CommandLineOptions commandLine = new CommandLineOptions(args);
    OptionsBuilder options = new OptionsBuilder();
    options
        .parent(commandLine)
        .include(ContractBench.class.getName())
        .jvmArgsAppend("-D" + BenchCases.ROOT_PROPERTY + "=" + root);
    // Every case unless the command line names some (-p name=hello,kb1).
    if (!commandLine.getParameter("name").hasValue()) {
      options.param("name", names);
    }
    new Runner(options.build()).run();
  }
}
