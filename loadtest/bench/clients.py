"""Where a Docker run's load comes from: the loadgen container on each client host.

One client host (this machine unless CLIENT_HOSTS names another) makes its
container the run's executor; several make a `ClientGroup`, which splits
every load over them and merges the results (measure/tools/group.py). With
SERVER_HOST or CLIENT_HOSTS, run.json also describes every host, as its
engine reports it (docs/remote.md).
"""

from __future__ import annotations

from loadtest.bench.console import cores_text
from loadtest.core.errors import StepError
from loadtest.core.knobs import Knobs
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import Executor, ToolError
from loadtest.measure.tools.group import ClientGroup
from loadtest.runners.engine import LOCAL, Engine


class LoadClients:
    """The loadgen containers of a run, started together and closed together."""

    def __init__(self, knobs: Knobs) -> None:
        self.knobs = knobs
        self.clients: list = []
        self.infos: list[dict] = []

    def engines(self) -> list[Engine]:
        return [Engine.named(host) for host in self.knobs.client_hosts] or [LOCAL]

    def start(self, runner, tools: list[str]) -> Executor:
        """Every client host's container (its image shipped there), checked for `tools`;
        the executor the run's load goes through. StepError names what failed."""
        for engine in self.engines():
            if engine.remote and (problem := engine.problem()):
                raise StepError("loadgen", "prerequisites", problem)
            self.clients.append(runner.load_client(self.knobs.client_cpus, engine))
            try:
                for name in tools:
                    self.clients[-1].binary(get_tool(name))
            except ToolError as exc:
                raise StepError("loadgen", "prerequisites", str(exc)) from None
        self.infos = [client.provenance() for client in self.clients]
        if len(self.clients) == 1:
            return self.clients[0]
        return ClientGroup([(client.engine.label, client) for client in self.clients])

    def record(self, run_info: dict, runner) -> None:
        """The client's provenance in run.json, and every host's when any is elsewhere."""
        infos = self.infos
        run_info["client"] = infos[0] if len(infos) == 1 else {"group": infos}
        # The load tools that produce the numbers are the image's; nginx (the ceiling) and
        # a front stay the host's.
        run_info["tools"] = {**run_info.get("tools", {}), **infos[0]["tools"]}
        if self.knobs.server_host:  # the ceiling runs there, from the loadgen image
            run_info["tools"]["nginx"] = self.clients[0].output(["nginx", "-v"]).strip()
        if self.knobs.server_host or self.knobs.client_hosts:
            run_info["hosts"] = {
                "server": getattr(runner, "engine", LOCAL).describe(),
                "clients": [client.engine.describe() for client in self.clients],
            }

    def lines(self) -> list[str]:
        """What the console says about each container."""
        return [
            f"[loadgen] load tools run in container {client.container_id[:12]} on "
            f"{client.engine.label}, cpuset {info.get('cpuset', '?')} (client cores "
            f"{cores_text(self.knobs.client_cpus)}), host network"
            for client, info in zip(self.clients, self.infos)
        ]

    def labels(self) -> list[str]:
        """The hosts the load came from ("local": this machine)."""
        return [client.engine.label for client in self.clients] or ["local"]

    def close(self) -> None:
        for client in self.clients:
            client.close()
        self.clients = []
