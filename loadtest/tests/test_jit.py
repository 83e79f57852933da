"""Warm means the runtime says so: the JIT signals read from real runtimes, and the
warm-up's rule on top of them (COLD when the compiler never goes quiet).

The HotSpot test starts a real JVM that keeps finding new code to compile; the
.NET test starts the ASP.NET Core stack and reads it with dotnet-counters while
requests arrive. Requests go to 127.0.0.1 only.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
import time
import urllib.request

import pytest

from loadtest.core.verdict import JIT_BOUND_S, JIT_QUIET_MS, JIT_QUIET_WINDOWS
from loadtest.measure import jit, steady
from loadtest.runners.native import running_stack

pytestmark = pytest.mark.timing


def test_the_compilers_that_expose_nothing_say_why_and_others_need_their_process():
    assert "PYPYLOG" in jit.signal_for("pypy", [1])
    assert "--trace-opt" in jit.signal_for("v8", [1])
    assert jit.signal_for("jvm", [1]) == "no jvm process among the server's processes"


@pytest.mark.skipif(shutil.which("java") is None, reason="java not found")
def test_hotspot_counters_are_read_from_a_running_jvm(tmp_path):
    source = tmp_path / "Busy.java"
    source.write_text(textwrap.dedent("""\
        public class Busy {
            public static void main(String[] args) throws Exception {
                long sum = 0;
                for (int round = 0; round < 600; round++) {
                    for (int i = 0; i < 200_000; i++) sum += Integer.toString(i ^ round).hashCode();
                    Thread.sleep(50);
                }
                System.out.println(sum);
            }
        }
    """))
    process = subprocess.Popen(["java", str(source)], stdout=subprocess.DEVNULL)
    try:
        signal = wait_for(lambda: jit.signal_for("jvm", [process.pid]), timeout=20)
        assert signal.name.startswith("jvm: java.ci.totalTime")
        first = signal.compiled()
        time.sleep(1.5)
        second = signal.compiled()
        assert first.methods > 100 and second.methods >= first.methods, (first, second)
        assert 0 < first.seconds <= second.seconds < 60, (first, second)
    finally:
        process.kill()
        process.wait()


def wait_for(make, timeout: float):
    """The first signal `make` gives that is not a reason (a JVM maps its file at start)."""
    deadline = time.monotonic() + timeout
    while True:
        made = make()
        if not isinstance(made, str) or time.monotonic() > deadline:
            assert not isinstance(made, str), made
            return made
        time.sleep(0.2)


@pytest.mark.skipif(shutil.which("dotnet") is None, reason="dotnet not found")
def test_dotnet_counters_read_the_methods_an_aspnetcore_stack_jits():
    with running_stack("aspnetcore") as server:
        signal = jit.signal_for("dotnet", server.pids())
        assert not isinstance(signal, str), signal
        try:
            deadline = time.monotonic() + 30
            seen = []
            while time.monotonic() < deadline and len({c.methods for c in seen}) < 2:
                for n in range(1, 30):
                    urllib.request.urlopen(f"{server.base_url}/?n={n}", timeout=5).read()
                time.sleep(1.2)
                if signal.compiled() is not None:
                    seen.append(signal.compiled())
            # ASP.NET Core jits hundreds of methods to serve, in a fraction of a second.
            assert seen and seen[0].methods > 100 and 0 < seen[0].seconds < 30, seen
            assert [c.methods for c in seen] == sorted(c.methods for c in seen), seen
        finally:
            signal.close()


class Compiler:
    """A stand-in JIT: it spends `per_window` milliseconds compiling in each window."""

    name = "stand-in"

    def __init__(self, per_window: list[float]) -> None:
        self.per_window = iter(per_window)
        self.totals = jit.Compiled(0, 0.0)

    def window(self) -> float:
        busy = next(self.per_window, 0.0)
        methods = int(busy) // 10  # a method per 10 ms
        self.totals = jit.Compiled(self.totals.methods + methods, self.totals.seconds + busy / 1000)
        return 1000.0  # a flat rate: the windows agree from the start

    def compiled(self) -> jit.Compiled:
        return self.totals

    def close(self) -> None:
        pass


def test_agreeing_windows_are_not_warm_until_the_compiler_has_been_quiet_long_enough():
    # Compiling comes in waves with quiet seconds between them: one quiet window is
    # not enough, JIT_QUIET_WINDOWS in a row are.
    waves = [900, 140, 0, 10, 0, 300, 120, 60] + [JIT_QUIET_MS - 1] * JIT_QUIET_WINDOWS
    compiler = Compiler(waves)
    warmed = steady.warm_up(compiler.window, bound_s=2, jit=jit.JitWatch(compiler))
    assert warmed.steady and not warmed.cold
    assert warmed.jit_compile_ms == waves
    record = warmed.to_dict()
    assert record["jit_quiet_after_s"] == len(waves)
    assert record["jit_last_window_ms"] == JIT_QUIET_MS - 1


def test_a_compiler_still_busy_at_the_bound_is_measured_cold():
    never_quiet = Compiler([JIT_QUIET_MS + 10] * 1000)
    warmed = steady.warm_up(never_quiet.window, bound_s=2, jit=jit.JitWatch(never_quiet),
                            loaded_before_s=JIT_BOUND_S - 5)  # fmt: skip
    assert warmed.cold and warmed.to_dict()["jit_cold"]
    assert len(warmed.curve) == 5  # what was left of the bound's seconds of load
    assert warmed.to_dict()["jit_quiet_after_s"] is None


def test_an_instance_quiet_since_its_earlier_warm_ups_needs_no_more_windows_than_two():
    compiler = Compiler([0] * 100)
    watch = jit.JitWatch(compiler)
    first = steady.warm_up(compiler.window, bound_s=2, jit=watch)
    assert len(first.curve) == JIT_QUIET_WINDOWS  # from a fresh instance: ten quiet seconds
    second = steady.warm_up(compiler.window, bound_s=2, jit=watch, loaded_before_s=20)
    assert len(second.curve) == 2 and second.steady and not second.cold


def test_without_a_compiler_the_windows_alone_decide():
    warmed = steady.warm_up(lambda: 1000.0, bound_s=5)
    assert warmed.steady and warmed.jit_quiet is None and not warmed.cold
    assert warmed.to_dict()["jit_signal"] is None


def test_the_screen_of_dotnet_counters_monitor_is_followed_through_its_cursor_moves():
    # What `monitor` writes to a pipe (captured from dotnet-counters 10.0.750501): the
    # table once, then only the values, each at its row, without a newline.
    table = ("\x1b[H\x1b[JPress p to pause, r to resume, q to quit.\n    Status: Running\n\n"
             "Name                                          Current Value\n[System.Runtime]\n"
             "    dotnet.jit.compilation.time (s)                   0.621\n"
             "    dotnet.jit.compiled_methods ({method})          1,484    \n")  # fmt: skip
    updates = "\x1b[6;50H          0.676\x1b[7;50H      1,542    \x1b[6;50H          0.744"
    screen = jit.Screen()
    text = table + updates
    for start in range(0, len(text), 7):  # as a pipe may cut it, escapes included
        screen.feed(text[start : start + 7])
    assert screen.values() == {"dotnet.jit.compilation.time": 0.744,
                               "dotnet.jit.compiled_methods": 1542.0}  # fmt: skip


def test_a_trickle_of_methods_in_little_time_is_not_quiet():
    # .NET's tier 0 compiling a few dozen small methods a second (little time each)
    # holds back its promotions to tier 1: the count breaks the quiet too.
    watch = jit.JitWatch(Compiler([]))
    for methods in (0, 30, 0, 0, 0, 0):
        watch.signal.totals = jit.Compiled(watch.signal.totals.methods + methods,
                                           watch.signal.totals.seconds + 0.005)  # fmt: skip
        watch.read()
    assert not watch.quiet()  # one window of 30 methods in the last five
    watch.read()
    assert watch.quiet()


def test_a_signal_that_gives_no_reading_is_given_up_after_a_few_windows():
    class Silent:
        name = "silent"

        def compiled(self):
            return None

        def close(self):
            pass

    warmed = steady.warm_up(lambda: 1000.0, bound_s=5, jit=jit.JitWatch(Silent()))
    assert warmed.steady and warmed.jit_quiet is None and not warmed.cold
    assert len(warmed.curve) == steady.JIT_SILENT_WINDOWS
