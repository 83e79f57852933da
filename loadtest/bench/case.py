"""One case on a started stack: the load run and its record.

A `CaseRunner` is given the run's `RunContext` (bench/context.py): it reads
the knobs, the executor and the paths there, appends one measurement record
per case to the context's journal and returns it. What it keeps between
cases is its own: the instance being measured (its JIT's compiler, its
seconds of load, its first record), the peaks that open-loop cases take a
fraction of, the ceiling's re-checks. Warm-up and priming are bench/warmup.py,
the sustainable-rate search bench/slo_search.py.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from rich.markup import escape

from loadtest.bench import plan, slo_search, warmup
from loadtest.bench.console import status_line
from loadtest.bench.context import RunContext, now
from loadtest.bench.loadspec import load_spec, raw_name
from loadtest.bench.plan import Case, Instance
from loadtest.bench.record import Offered, Ran, measurement_record, recheck_record
from loadtest.core.knobs import SCENARIO_HEADERS, SCENARIOS
from loadtest.measure import jit, steady, ttfb
from loadtest.measure.fairness import FairnessSampler
from loadtest.measure.metrics import UsageSampler, response_bytes
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import LoadSpec
from loadtest.measure.tools.group import run_load
from loadtest.runners.engine import LOCAL, EngineStatsSampler


class CaseRunner:
    def __init__(self, context: RunContext, peaks: dict[tuple, float] | None = None) -> None:
        self.context = context
        self.response_bytes: dict[tuple[str, str], dict] = {}
        # The closed-loop peak of each case measured so far (a resumed run's too).
        self.peaks: dict[tuple, float] = dict(peaks or {})
        self.instance = warmup.Loaded()  # the instance being measured
        self.first_record: dict | None = None  # the instance's first measurement
        # The ceiling's re-check changes so far in this run: how far the host moves between
        # an instance's start and end (DRIFTED; the report judges again with all of them).
        self.ceiling_changes: list[float] = []

    def begin_instance(self, server, stack: str) -> None:
        """A started instance: read its JIT's compiler, if it declares one."""
        self.end_instance()
        self.first_record = None
        manifest = self.context.manifests.get(stack)
        self.instance = warmup.Loaded(compiler=compiler_of(manifest, server, self.context))

    def end_instance(self) -> None:
        self.instance.close()

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

    def spec(self, server, case: Case, rate: float | None = None, duration=None) -> LoadSpec:
        return load_spec(self.context.knobs, self.context.priority, server, case, rate, duration)

    def warm_up(self, server, instance: Instance, scenario: str) -> steady.WarmUp | None:
        """Load before a scenario's first case until its throughput is steady (bench/warmup.py)."""
        return warmup.warm_up(self.context, self.instance, server, instance, scenario)

    def offered(self, case: Case) -> Offered | None:
        """The rate a case offers; None when it takes a fraction of a peak never measured."""
        if not case.rate:
            return Offered()
        if case.rate[-1] == "%" or case.rate == "slo":
            peak = self.peaks.get(peak_key(case))
            if not peak:
                what = (
                    "the sustainable-rate search" if case.rate == "slo" else f"oha at {case.rate}"
                )
                self.context.status.say(f"[yellow]! {case.stack} {case.scenario}: no peak "
                                        f"measured, skipping {what}[/]")  # fmt: skip
                return None
            if case.rate == "slo":
                return Offered(rate=peak)  # the search starts below it
            fraction = float(case.rate[:-1]) / 100
            return Offered(rate=max(1.0, round(peak * fraction)), fraction=fraction)
        return Offered(rate=float(case.rate))

    def run(self, server, instance: Instance, case: Case, warmed=None) -> dict | None:
        """Measure one case and write its record; the record, or None when it could not run."""
        offered = self.offered(case)
        if offered is None:
            return None
        slo_fields: dict = {}
        if case.rate == "slo":
            found, ran = self.sustainable(server, case, offered.rate)
            slo_fields = found.to_record()
            offered = Offered(rate=ran.spec.rate)
        seq = self.context.journal.next_seq()
        if not slo_fields:
            at = f" @{offered.rate:g}/s" if offered.rate else ""
            self.context.status.doing(f"{case.stack} {case.scenario} c={case.connections}{at}")
            spec = self.spec(server, case, rate=offered.rate)
            ran = self.measure(server, case, spec, self.context.raw(raw_name(case, seq)))
        alive = server.is_alive()
        extra = {
            "response": self.response_bytes.get((case.stack, case.scenario)),
            "server_alive_after": alive,
            # Fresh connections tell something even when the load failed (one request each).
            **(self.ttfb(server, case, seq) if server.is_alive() else {}),
            **(warmed.to_dict() if warmed else {}),
            **slo_fields,
        }
        record = measurement_record(self.context, case, server, ran, offered, seq, extra)
        self.context.journal.write(record)
        self.after(case, record)
        return record

    def after(self, case: Case, record: dict) -> None:
        """What a written record leaves behind: the instance's first, the peak, its line."""
        if self.first_record is None:
            self.first_record = record
        if case.phase == "peak" and record["status"] == "ok":
            self.peaks[peak_key(case)] = record["result"]["rps"]
        k = self.context.knobs
        position = self.context.status.case_done(plan.case_seconds(k, case))
        self.context.status.say(status_line(record, position, bool(k.server_cores)))

    def recheck(self, server, instance: Instance) -> dict | None:
        """The instance's first case measured again after its last (DRIFTED): one
        closed-loop run of the same load, compared with the first figure."""
        first = self.first_record
        if not first or first["status"] != "ok" or first["rate"] or not server.is_alive():
            return None
        case = next(c for c in instance.cases if c.key == first["key"])
        self.context.status.doing(
            f"{case.stack} {case.scenario} c={case.connections} measured again"
        )
        raw = self.context.raw(f"{raw_name(case, first['seq'])}-again")
        ran = self.measure(server, case, self.spec(server, case), raw)
        record = recheck_record(self.context.run_id, first, case, ran, self.ceiling_changes)
        self.context.journal.write(record)
        if first.get("ceiling") and record["change"] is not None:
            self.ceiling_changes.append(record["change"])
        if record["drifted"]:
            self.context.status.say(
                f"[bold magenta]DRIFTED[/] {escape(case.stack)} r{case.repetition}: "
                f"{case.scenario} c={case.connections} measured first at "
                f"{record['first_rps']:,.0f} and again at its end at {record['again_rps']:,.0f} req/s "
                f"({record['change']:+.0%}); every figure of this instance is flagged")  # fmt: skip
        return record

    def measure(self, server, case: Case, spec: LoadSpec, raw) -> Ran:
        """One load-tool run with the server's and the cores' CPU sampled around it."""
        started_at = now()
        self.context.prioritize(server)  # workers forked since start get it too
        cpus = plan.server_cpus_for(self.context.knobs, case.cores)
        sampler = usage_sampler(server, cpus, self.context.knobs.client_cpus)
        connections = fairness_sampler(server, spec)
        sampler.start()
        if connections:
            connections.start()
        try:
            result = run_load(get_tool(case.tool), spec, raw, self.context.executor)
        finally:
            usage = sampler.stop()
            fairness = connections.stop() if connections else None
        self.instance.loaded_s += result.duration_s or spec.duration or 0
        if isinstance(sampler, EngineStatsSampler):
            usage.cpu_active_pct = sampler.active_pct(
                result.details.get("load_window_s", result.duration_s)
            )
        return Ran(spec, result, usage, started_at, fairness.to_dict() if fairness else None)

    def sustainable(self, server, case: Case, peak: float):
        """The sustainable-rate search below `peak` (bench/slo_search.py)."""

        def run_at(rate: float, duration: float, raw) -> Ran:
            return self.measure(server, case, self.spec(server, case, rate, duration), raw)

        raw = self.context.raw("slo", raw_name(case, self.context.journal.seq + 1))
        return slo_search.search(self.context, case, peak, run_at, raw)

    def ttfb(self, server, case: Case, seq: int) -> dict:
        """TTFB_SAMPLES fresh connections on the now idle server (the `ttfb_*` fields)."""
        k = self.context.knobs
        if not k.ttfb or case.phase != "measure":
            return {}
        self.context.status.doing(f"{case.stack} {case.scenario} TTFB")
        return ttfb.measure(
            server.base_url + case.path, getattr(server, "tls_cert", None),
            self.context.raw(raw_name(case, seq) + "-ttfb"),
            samples=k.ttfb, headers=case.headers, cpus=k.client_cpus,
            priority=self.context.priority, timeout=k.timeout,
        )  # fmt: skip


def compiler_of(manifest, server, context: RunContext) -> jit.JitWatch | str | None:
    """The instance's JIT compiler signal, why there is none, or None (no JIT declared)."""
    kind = getattr(manifest, "jit", None)
    if not kind:
        return None
    if getattr(server, "engine", LOCAL).remote:
        return f"the {kind} compiler is not read on another host"
    return jit.watch(kind, server.pids(), context.knobs.client_cpus)


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


def peak_key(case_or_record) -> tuple:
    get = (
        (lambda k: case_or_record[k])
        if isinstance(case_or_record, dict)
        else (lambda k: getattr(case_or_record, {"cpu_quota": "quota"}.get(k, k)))
    )
    return (get("stack"), get("cpu_quota"), get("scenario"), get("connections"), get("repetition"))
