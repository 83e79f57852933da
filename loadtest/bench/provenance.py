"""What a run records about itself in run.json: versions, host, knobs, fronts, stacks."""

from __future__ import annotations

import datetime as dt
import sys

from loadtest.bench.results import git_info, host_info
from loadtest.core.errors import StepError
from loadtest.core.knobs import Knobs
from loadtest.core.manifest import REPO_ROOT
from loadtest.measure.tools import TOOLS, get_tool
from loadtest.runners import calibration, front


def tool_versions(knobs: Knobs) -> dict:
    """Every load tool of this host (or "absent"), nginx for the ceiling, and the front."""
    versions = {}
    for name in TOOLS:
        tool = get_tool(name)
        versions[name] = tool.version() if tool.available() else "absent"
    versions["nginx"] = calibration.version()
    if knobs.front != "none":
        versions["front"] = front.version(knobs.front)
    return versions


def front_provenance(knobs: Knobs, manifests: dict) -> dict:
    kind = knobs.front
    if kind == "none":
        # A variant with tls = true (aspnetcore@https) serves HTTPS itself among plain stacks.
        own = {name: m["self_tls_terminator"] for name, m in manifests.items()
               if m.get("tls") and m.get("self_tls_terminator")}  # fmt: skip
        return {"kind": "none", "terminators": own} if own else {"kind": "none"}
    if kind == front.SELF:
        # No proxy: each stack's own server terminates TLS, named by its [self_tls].
        terminators = {name: m.get("self_tls_terminator") for name, m in manifests.items()}
        return {"kind": kind, "version": front.version(kind), "terminators": terminators}
    template = front.FRONTS[kind].template
    return {
        "kind": kind,
        "version": front.version(kind),
        "template": str(template.relative_to(REPO_ROOT)),
        "configs": {},  # stack -> the rendered config, filled in at its first start
    }


def provenance(
    run_id: str, knobs: Knobs, manifests: dict, runner_choice: dict, priority: int
) -> dict:
    """run.json as a run starts; `manifests` is each stack's manifest provenance."""
    return {
        "run_id": run_id,
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": sys.argv,
        "git": git_info(),
        "host": host_info(),
        "tools": tool_versions(knobs),  # a Docker run replaces wrk, ab, oha: start_client
        "runner": runner_choice,
        "client": {"where": "host"} if knobs.runner == "native" else {},
        "knobs": knobs.to_dict(),
        "stacks": manifests,
        "runtime_versions": {},
        "priority_applied": priority,
        "front": front_provenance(knobs, manifests),
        "status": "running",
    }


def runtime_ran(run_info: dict | None, manifest) -> str | None:
    """The runtime version a stack actually ran on, as read at build time.

    Natively its manifest's version command (e.g. the JDK with-jdk picked);
    in Docker what the stand-in base images hold, else the image's runtime.
    None for the ceiling and a stack that never built.
    """
    info = (run_info or {}).get("runtime_versions", {}).get(getattr(manifest, "name", ""), {})
    if manifest is None or not info:
        return None
    if "runtime_native" in info:
        return info["runtime_native"]
    inside = "; ".join(sorted(set(info.get("standin_content", {}).values())))
    return inside or f"{manifest.runtime} {manifest.runtime_version}"


def record_dependencies(runner, manifest, run_info: dict) -> str | None:
    """The stack's resolved dependency list, next to its manifest in run.json; the
    problem, when the list cannot be read.

    Such a list is recorded as unreadable and shown; it does not keep the stack
    out of the run (its lock files are checked by make test).
    """
    entry = run_info["stacks"].setdefault(manifest.name, manifest.provenance())
    entry.pop("dependencies_error", None)
    lister = getattr(runner, "dependencies", None)
    if lister is None:
        entry["dependencies"] = None
        entry["dependencies_error"] = f"the {runner.name} runner does not list them"
        return None
    try:
        entry["dependencies"] = lister(manifest)
    except StepError as exc:
        entry["dependencies"] = None
        # The command's own words (its stderr's tail), not only that it failed.
        entry["dependencies_error"] = exc.message + (f": {exc.output.strip()[-1500:]}"
                                                     if exc.output.strip() else "")  # fmt: skip
        return str(exc)
    return None
