"""One case on a started stack: warm-up until steady, JIT priming, the load run, its record.

A `CaseRunner` measures for one `Bench` (loadtest/bench/run.py): it reads the
run's knobs, results writer and load-tool executor from it and appends one
measurement record per case to results.jsonl.
"""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from rich.markup import escape

from loadtest.bench import plan
from loadtest.bench.console import rates, status_line
from loadtest.bench.plan import Case, Instance
from loadtest.bench.provenance import runtime_ran
from loadtest.bench.record import foreign_load, limits
from loadtest.core import slo
from loadtest.core.knobs import SCENARIO_HEADERS, SCENARIOS
from loadtest.core.stats import bootstrap_ci
from loadtest.core.change import drifted, window_spread
from loadtest.core.verdict import NOISY_FOREIGN_PCT, WARMUP_WINDOW_S, reconnects, uneven
from loadtest.measure import jit, steady, ttfb
from loadtest.measure.fairness import FairnessSampler
from loadtest.measure.metrics import UsageSampler, response_bytes
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import LoadSpec, latency_key
from loadtest.measure.tools.group import client_load, run_load
from loadtest.runners import calibration
from loadtest.runners.front import tls_front
from loadtest.runners.engine import LOCAL, EngineStatsSampler

# The declared JIT warm-up goes round the instance's scenarios this many times,
# so each is hot and none was last primed long before it is measured.
PRIME_PASSES = 2


class CaseRunner:
    def __init__(self, bench) -> None:
        self.bench = bench
        self.response_bytes: dict[tuple[str, str], dict] = {}
        self.peaks: dict[tuple, float] = {}
        # The instance being measured: its JIT's compiler signal (or why there is
        # none) and the seconds of load it has had since it started.
        self.compiler: jit.JitWatch | str | None = None
        self.loaded_s = 0.0
        self.first_record: dict | None = None  # the instance's first measurement
        # The ceiling's re-check changes so far in this run: how far the host moves between
        # an instance's start and end (DRIFTED; the report judges again with all of them).
        self.ceiling_changes: list[float] = []

    def begin_instance(self, server, stack: str) -> None:
        """A started instance: read its JIT's compiler, if it declares one."""
        self.end_instance()
        self.loaded_s = 0.0
        self.first_record = None
        manifest = self.bench.manifests.get(stack)
        kind = getattr(manifest, "jit", None)
        if kind and getattr(server, "engine", LOCAL).remote:
            self.compiler = f"the {kind} compiler is not read on another host"
        elif kind:
            signal = jit.signal_for(kind, server.pids(), self.bench.knobs.client_cpus)
            self.compiler = signal if isinstance(signal, str) else jit.JitWatch(signal)

    def end_instance(self) -> None:
        if self.compiler is not None and not isinstance(self.compiler, str):
            self.compiler.close()
        self.compiler = None

    def measure_response_bytes(self, stack: str, server, instance: Instance) -> None:
        where = urlsplit(server.base_url)
        for scenario in {c.scenario for c in instance.cases}:
            if (stack, scenario) not in self.response_bytes:
                measured = response_bytes(
                    where.hostname, where.port, SCENARIOS[scenario],
                    tls_cert=getattr(server, "tls_cert", None),
                    headers=SCENARIO_HEADERS.get(scenario, ()),
                )  # fmt: skip
                self.response_bytes[(stack, scenario)] = measured.to_dict()

    def spec(self, server, case: Case, rate: float | None = None, duration=None):
        k = self.bench.knobs
        fixed = case.tool in ("ab", "h2load") and duration is None
        return LoadSpec(
            url=server.base_url + case.path,
            connections=case.connections,
            duration=duration if duration is not None else k.duration,
            timeout=k.timeout,
            threads=k.threads,
            rate=rate,
            requests=k.requests.get(case.scenario) if fixed else None,
            keepalive=k.keepalive,
            client_cpus=k.client_cpus,
            priority=self.bench.priority,
            headers=case.headers,
            # HTTP/2 here means over TLS (ALPN); no stack speaks cleartext h2c.
            http1=k.http == "1.1" or not server.base_url.startswith("https:"),
            ca_cert=str(server.tls_cert) if getattr(server, "tls_cert", None) else None,
        )

    def warm_up(self, server, instance: Instance, scenario: str) -> steady.WarmUp | None:
        """Load before a scenario's first case until its throughput is steady (JITs,
        caches, pools): one-second windows, at most WARMUP seconds (loadtest/steady.py)."""
        if self.bench.knobs.warmup <= 0:
            return None
        connections = max(c.connections for c in instance.cases if c.scenario == scenario)
        # h2load cases warm up with h2load: the same protocol, TLS sessions and headers.
        measured_by = {c.tool for c in instance.cases if c.scenario == scenario}
        tool = "h2load" if measured_by == {"h2load"} else "wrk"
        case = Case(instance.stack, instance.quota, scenario, connections, tool, "",
                    instance.repetition, "warmup", instance.cores)  # fmt: skip
        spec = self.spec(server, case, duration=WARMUP_WINDOW_S)
        raw = self.bench.folder / "raw" / "warmup" / raw_name(case)
        primed = self.prime(server, instance, case, tool)
        windows = 0

        def window() -> float | None:
            nonlocal windows
            windows += 1
            self.bench.progress.update(
                self.bench.task, description=f"{instance.stack} {scenario} warm-up {windows}s"
            )
            result = run_load(
                get_tool(tool), spec, raw.with_name(f"{raw.name}.w{windows}"), self.bench.executor
            )
            return result.rps if result.ok and result.requests > 0 else None

        signal = self.compiler if not isinstance(self.compiler, str) else None
        warmed = steady.warm_up(window, self.bench.knobs.warmup, primed,
                                jit=signal,
                                loaded_before_s=self.loaded_s)  # fmt: skip
        warmed.jit_signal = signal.name if signal else (self.compiler or "")
        if signal and warmed.jit_quiet is None:
            warmed.jit_signal += ": no reading, so the windows alone decided"
        self.loaded_s += warmed.seconds
        if not warmed.steady and not warmed.problem:
            self.bench.say(f"[yellow]! {escape(instance.stack)} {scenario}: not steady after "
                     f"{warmed.seconds:g} s of warm-up (windows {rates(warmed.curve)})[/]")  # fmt: skip
        if warmed.cold:
            self.bench.say(f"[yellow]! {escape(instance.stack)} {scenario}: COLD, its JIT still "
                           f"spent {warmed.jit_compile_ms[-1]:g} ms of the last second compiling "
                           f"after {self.loaded_s:g} s of load[/]")  # fmt: skip
        return warmed

    def prime(self, server, instance: Instance, case: Case, tool: str) -> float:
        """Before an instance's first warm-up: the seconds of load its manifest
        declares (`warmup_s`, a JIT's compile queue), spread over every scenario
        the instance will measure, in PRIME_PASSES turns.

        A JIT compiles the code each request path runs: primed on one scenario
        only, the others start cold (spring-mvc's /workday after 60 s of / ran
        15k, 18k, 29k, then 44k req/s in its first 1 s windows; after a mixed
        prime, 44k from the first window: docs/methodology.md, "Steady state").
        """
        manifest = self.bench.manifests.get(instance.stack)
        seconds = manifest.warmup_s if manifest else 0.0
        first = case.scenario == instance.cases[0].scenario
        if not seconds or not first:
            return 0.0
        scenarios = list(dict.fromkeys(c.scenario for c in instance.cases))
        slice_s = max(WARMUP_WINDOW_S, seconds / (PRIME_PASSES * len(scenarios)))
        for turn in range(PRIME_PASSES):
            for scenario in scenarios:
                self.bench.progress.update(self.bench.task, description=(
                    f"{instance.stack} JIT warm-up {seconds:g} s: {scenario} ({turn + 1}/{PRIME_PASSES})"))  # fmt: skip
                connections = max(c.connections for c in instance.cases if c.scenario == scenario)
                load = replace(case, scenario=scenario, connections=connections)
                raw = self.bench.folder / "raw" / "warmup" / f"{raw_name(load)}.primed{turn + 1}"
                run_load(
                    get_tool(tool),
                    self.spec(server, load, duration=slice_s),
                    raw,
                    self.bench.executor,
                )
        return seconds

    def run(self, server, instance: Instance, case: Case, warmed=None) -> None:
        k = self.bench.knobs
        rate = None
        fraction = None
        slo_fields: dict = {}
        if case.rate.endswith("%"):
            fraction = float(case.rate[:-1]) / 100
            peak = self.peaks.get(peak_key(case))
            if not peak:
                self.bench.say(f"[yellow]! {case.stack} {case.scenario}: no peak measured, "
                         f"skipping oha at {case.rate}[/]")  # fmt: skip
                return
            rate = max(1.0, round(peak * fraction))
        elif case.rate == "slo":
            peak = self.peaks.get(peak_key(case))
            if not peak:
                self.bench.say(f"[yellow]! {case.stack} {case.scenario}: no peak measured, "
                         "skipping the sustainable-rate search[/]")  # fmt: skip
                return
            found, ran = self.sustainable(server, case, peak)
            slo_fields = found.to_record()
            rate = ran.spec.rate
        elif case.rate:
            rate = float(case.rate)
        tool = get_tool(case.tool)
        self.bench.seq += 1
        if not slo_fields:
            self.bench.progress.update(
                self.bench.task,
                description=f"{case.stack} {case.scenario} c={case.connections}"
                + (f" @{rate:g}/s" if rate else ""),
            )
            raw = self.bench.folder / "raw" / raw_name(case, self.bench.seq)
            ran = self.measure(server, case, self.spec(server, case, rate=rate), raw)
        spec, result, usage, started_at = ran.spec, ran.result, ran.usage, ran.started_at
        cpus = plan.server_cpus_for(k, case.cores)
        alive = server.is_alive()
        share, bound, cores = client_load(tool, spec, result)
        # A case cut short by the server's death measured the crash, not the stack:
        # kept for the record, never counted (and measured again by --resume).
        ok = result.ok and result.requests > 0 and alive
        if not alive:
            result.problem = "; ".join(
                p for p in ("server exited during the case", result.problem) if p
            )
        shared = bool(set(cpus) & set(k.client_cpus))
        tool_used = result.tool_cpu_s / result.wall_s if result.wall_s else 0
        foreign = foreign_load(usage, tool_used, k, cpus)
        # Only ab may run without keep-alive (a profile's `keepalive`); the others always keep it.
        keepalive = k.keepalive if case.tool == "ab" else True
        # Fresh connections tell something even when the load failed (one request each).
        first_byte = self.ttfb(server, case) if server.is_alive() else {}
        record = {
            "kind": "measurement",
            "seq": self.bench.seq,
            "run_id": self.bench.run_id,
            "key": case.key,
            "status": "ok" if ok else "failed",
            "problem": result.problem,
            "stack": case.stack,
            "display_name": self.bench.display_name(case.stack),
            # The runtime version that ran (None for the ceiling): run.json has the details.
            "runtime": runtime_ran(self.bench.run_info, self.bench.manifests.get(case.stack)),
            "ceiling": case.stack == calibration.NAME,
            # The ceiling runs natively, or in a container on another host (SERVER_HOST).
            "runner": "native"
            if case.stack == calibration.NAME and not k.server_host
            else k.runner,
            # Who terminated TLS: a front, "self" (the stack), "none" (plain HTTP; the ceiling).
            "front": tls_front(k.front, self.bench.manifests.get(case.stack)),
            # Where the load tool ran: "host" or "loadgen-container" (a Docker run).
            "client": self.bench.executor.where,
            # The hosts of the server and of the load (docs/remote.md); "local" = this machine.
            "server_host": getattr(server, "engine", LOCAL).label,
            "client_hosts": self.bench.load_clients.labels(),
            "scenario": case.scenario,
            "path": case.path,
            "connections": case.connections,
            "tool": case.tool,
            "phase": case.phase,
            "rate_spec": case.rate,
            "rate": rate,
            "rate_fraction": fraction,
            "repetition": case.repetition,
            "cpu_quota": case.quota,
            "server_cores": len(cpus),
            # Share of the server cores the quota allows (1 = uncapped).
            "cpu_share": round(case.quota / len(cpus), 4) if case.quota is not None else 1.0,
            # Server and load tool on the same cores (e.g. 2 server cores on a 2-core host).
            "shared_cores": shared,
            "server_memory": k.server_memory or None,
            "server_cpus": list(cpus),
            "client_cpus": list(k.client_cpus),
            "threads": k.threads if case.tool in ("wrk", "h2load") else None,
            "headers": dict(case.headers),
            "duration_s": k.duration,
            "keepalive": keepalive,
            "started_at": started_at,
            "result": result.to_dict(),
            "server": usage.to_dict(),
            "tool_cpu_share": round(share, 4),
            "tool_cores": cores,
            "priority": self.bench.priority,
            "client_bound": bound,
            # CPU used on the pinned cores by anything but the server and the tool.
            "foreign_load_pct": foreign,
            "noisy": any(v is not None and v > NOISY_FOREIGN_PCT for v in foreign.values()),
            # How evenly the server served the connections, and whether it kept them
            # (None where unread), with the verdicts on both.
            "fairness": ran.fairness,
            "uneven": uneven(ran.fairness),
            "reconnects": reconnects(ran.fairness, keepalive),
            "response": self.response_bytes.get((case.stack, case.scenario)),
            "server_alive_after": alive,
            **first_byte,
            **(warmed.to_dict() if warmed else {}),
        }
        record.update(slo_fields)
        record.update(limits(record, fraction is not None or rate is not None))
        self.bench.writer.write(record)
        if self.first_record is None:
            self.first_record = record
        if case.phase == "peak" and ok:
            self.peaks[peak_key(case)] = result.rps
        self.bench.cases_run += 1
        self.bench.progress.update(self.bench.task, advance=plan.case_seconds(k, case),
                             cases=f"{self.bench.cases_run}/{self.bench.cases_total}")  # fmt: skip
        self.bench.say(
            status_line(
                record, f"[{self.bench.cases_run}/{self.bench.cases_total}]", bool(k.server_cores)
            )
        )

    def recheck(self, server, instance: Instance) -> None:
        """The instance's first case measured again after its last (DRIFTED): one
        closed-loop run of the same load, compared with the first figure."""
        first = self.first_record
        if not first or first["status"] != "ok" or first["rate"] or not server.is_alive():
            return
        case = next(c for c in instance.cases if c.key == first["key"])
        self.bench.progress.update(self.bench.task, description=(
            f"{case.stack} {case.scenario} c={case.connections} measured again"))  # fmt: skip
        raw = self.bench.folder / "raw" / f"{raw_name(case, first['seq'])}-again"
        ran = self.measure(server, case, self.spec(server, case), raw)
        again = ran.result.rps if ran.result.ok else 0.0
        first_rps = first["result"]["rps"]
        rerun = {"result": {"rps": again}, "server": ran.usage.to_dict()}
        intervals = [window_interval(first), window_interval(rerun)]
        windows = steady.window_rates(first_rps, first["server"].get("loopback_bytes_per_s") or [])
        record = {
            "kind": "recheck",
            "run_id": self.bench.run_id,
            "stack": case.stack,
            "repetition": case.repetition,
            "cpu_quota": case.quota,
            "server_cores": first["server_cores"],
            "scenario": case.scenario,
            "connections": case.connections,
            "tool": case.tool,
            "first_seq": first["seq"],
            "first_rps": first_rps,
            "again_rps": round(again, 1),
            "change": round(again / first_rps - 1, 4) if first_rps else None,
            "first_interval": intervals[0],
            "again_interval": intervals[1],
            "drifted": drifted(first_rps, again, window_spread(windows), self.ceiling_changes),
            "started_at": ran.started_at,
            "problem": ran.result.problem,
        }
        self.bench.writer.write(record)
        if first.get("ceiling") and record["change"] is not None:
            self.ceiling_changes.append(record["change"])
        if record["drifted"]:
            self.bench.say(
                f"[bold magenta]DRIFTED[/] {escape(case.stack)} r{case.repetition}: "
                f"{case.scenario} c={case.connections} measured first at {first_rps:,.0f} and "
                f"again at its end at {again:,.0f} req/s ({record['change']:+.0%}); every "
                "figure of this instance is flagged")  # fmt: skip

    def measure(self, server, case: Case, spec: LoadSpec, raw) -> Ran:
        """One load-tool run with the server's and the cores' CPU sampled around it."""
        started_at = now()
        self.bench.prioritize(server)  # workers forked since start get it too
        cpus = plan.server_cpus_for(self.bench.knobs, case.cores)
        sampler = usage_sampler(server, cpus, self.bench.knobs.client_cpus)
        connections = fairness_sampler(server, spec)
        sampler.start()
        if connections:
            connections.start()
        try:
            result = run_load(get_tool(case.tool), spec, raw, self.bench.executor)
        finally:
            usage = sampler.stop()
            fairness = connections.stop() if connections else None
        self.loaded_s += result.duration_s or spec.duration or 0
        if isinstance(sampler, EngineStatsSampler):
            usage.cpu_active_pct = sampler.active_pct(
                result.details.get("load_window_s", result.duration_s)
            )
        return Ran(spec, result, usage, started_at, fairness.to_dict() if fairness else None)

    def sustainable(self, server, case: Case, peak: float) -> tuple[slo.SloResult, Ran]:
        """The sustainable-rate search (core/slo.py): constant-rate oha steps below the
        peak. The run recorded is the search's last passing one (its confirmation), or
        its last one when none passed."""
        k = self.bench.knobs
        tool = get_tool(case.tool)
        raw = self.bench.folder / "raw" / "slo" / raw_name(case, self.bench.seq + 1)
        runs: list[Ran] = []
        passed: list[Ran] = []

        def probe(rate: float) -> slo.Step:
            self.bench.progress.update(self.bench.task, description=(
                f"{case.stack} {case.scenario} c={case.connections} "
                f"SLO step {len(runs) + 1} @{rate:g}/s"))  # fmt: skip
            spec = self.spec(server, case, rate=rate, duration=slo.step_seconds(rate, k.duration))
            ran = self.measure(server, case, spec, raw.with_name(f"{raw.name}-s{len(runs) + 1}"))
            runs.append(ran)
            result = ran.result
            answered = result.ok and result.requests > 0
            step = slo.Step(
                offered=rate,
                achieved=result.rps if answered else 0.0,
                percentile_ms=percentile_ms(result, k.slo_percentile) if answered else None,
                errors=result.errors_total + (0 if answered else 1),
                client_bound=client_load(tool, spec, result)[1],
            )  # fmt: skip
            if step.outcome(k.slo_p99_ms) == "pass":
                passed.append(ran)
            return step

        found = slo.search(peak, probe, k.slo_p99_ms, k.slo_percentile)
        answer = f"{found.slo_rps:,.0f} req/s" if found.slo_rps else f"none ({found.reason})"
        self.bench.say(escape(
            f"[{case.stack}] {case.scenario} c={case.connections}: sustainable within "
            f"p{k.slo_percentile:g} <= {k.slo_p99_ms:g} ms: {answer}; peak {peak:,.0f}, "
            f"{len(found.steps)} steps"))  # fmt: skip
        return found, (passed[-1] if found.slo_rps else runs[-1])

    def ttfb(self, server, case: Case) -> dict:
        """TTFB_SAMPLES fresh connections on the now idle server (the `ttfb_*` fields)."""
        if not self.bench.knobs.ttfb or case.phase != "measure":
            return {}
        self.bench.progress.update(
            self.bench.task, description=f"{case.stack} {case.scenario} TTFB"
        )
        raw = self.bench.folder / "raw" / (raw_name(case, self.bench.seq) + "-ttfb")
        return ttfb.measure(
            server.base_url + case.path, getattr(server, "tls_cert", None), raw,
            samples=self.bench.knobs.ttfb, headers=case.headers, cpus=self.bench.knobs.client_cpus,
            priority=self.bench.priority, timeout=self.bench.knobs.timeout,
        )  # fmt: skip


@dataclass
class Ran:
    """What one load-tool run gave: the record of a measurement is built from it."""

    spec: LoadSpec
    result: object  # the tool's LoadResult
    usage: object  # the server's and the cores' CPU (UsageSampler)
    started_at: str
    fairness: dict | None = None  # how evenly its connections were served (measure/fairness.py)


def usage_sampler(server, cpus: tuple[int, ...], client_cpus: tuple[int, ...]):
    """The server's CPU and memory: its process tree here, or its engine's figures elsewhere."""
    engine = getattr(server, "engine", LOCAL)
    if engine.remote:
        return EngineStatsSampler(engine, server.container_id)
    return UsageSampler(server.pids, cpus, client_cpus)


def fairness_sampler(server, spec: LoadSpec) -> FairnessSampler | None:
    """The connections' service, read where the server's sockets are: this machine."""
    if getattr(server, "engine", LOCAL).remote or not spec.duration:
        return None
    port = urlsplit(spec.url).port
    return FairnessSampler(port, spec.connections, spec.duration) if port else None


def window_interval(record: dict) -> list[float] | None:
    """The 95% interval of one run's rate over its quarter-second windows (report/samples)."""
    loopback = record["server"].get("loopback_bytes_per_s") or []
    samples = steady.window_rates(record["result"]["rps"], loopback)
    interval = bootstrap_ci(samples, statistic=statistics.fmean)
    return [round(interval[0], 1), round(interval[1], 1)] if interval else None


def percentile_ms(result, percent: float) -> float | None:
    """The result's latency at `percent`: its own figure, else from its percentile curve."""
    value = result.latency_ms.get(latency_key(percent))
    if value is not None:
        return value
    above = [ms for p, ms in result.latency_curve if p >= percent]
    return above[0] if above else None


def peak_key(case_or_record) -> tuple:
    get = (
        (lambda k: case_or_record[k])
        if isinstance(case_or_record, dict)
        else (lambda k: getattr(case_or_record, {"cpu_quota": "quota"}.get(k, k)))
    )
    return (get("stack"), get("cpu_quota"), get("scenario"), get("connections"), get("repetition"))


def raw_name(case: Case, seq: int | None = None) -> str:
    parts = [f"{seq:04d}" if seq else "", case.stack, case.scenario, f"c{case.connections}"]
    if case.quota is not None:
        parts.append(f"q{case.quota:g}")
    if case.cores is not None:
        parts.append(f"{case.cores}cores")
    parts.append(case.tool + (f"-{case.rate.replace('%', 'pct')}" if case.rate else ""))
    parts.append(f"r{case.repetition}")
    return "-".join(p for p in parts if p)


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
