# serverlab: one HTTP contract, many server stacks, one harness.
# `make help` lists every target. Variables in CAPITALS are the knobs.

SHELL := bash
.DEFAULT_GOAL := help
.SUFFIXES:

PY := .venv/bin/python
HARNESS := $(PY) -m loadtest

# Knobs (see docs/methodology.md); empty means "the profile decides".
SERVERS ?=
SERVER ?=
PROFILE ?= quick
RUNNER ?=
SCENARIOS ?=
CONNECTIONS ?=
DURATION ?=
WARMUP ?=
REPEAT ?=
SERVER_CPUS ?=
CLIENT_CPUS ?=
SERVER_CPU_QUOTA ?=
SERVER_MEMORY ?=
RATE ?=
TOOL ?=
SEED ?=
RESUME ?=
PRIORITY ?=
TIMEOUT ?=
FRONT ?=
TTFB ?=
SERVER_CORES ?=
HTTP ?=
TLS_TOOL ?=
SLO_P99_MS ?=
SLO_PERCENTILE ?=
# Docker engines elsewhere (docs/remote.md): a context name or ssh://user@host.
SERVER_HOST ?=
CLIENT_HOSTS ?=
# tc netem on the test hosts' links (make remote-smoke, make testhosts-up).
NET_DELAY ?=
NET_LOSS ?=
RUN ?=
RUNS ?=
# make ab: each side's git revision and/or NAME=value settings (SERVER_CPU_QUOTA=0.9, WORKERS=2).
A ?=
B ?=
# make check: stacks checked side by side (one build group at a time each).
JOBS ?=
# make microbench: pyperf's options for the Python benchmark (--rigorous, --fast; --only wsgi: for names
# starting so), and the languages to run (python,go,java,node,rust; default all).
MICROBENCH_ARGS ?=
MICROBENCH_LANGUAGES ?=
# make instructions: an earlier table (another day's) to compare each count with.
INSTRUCTIONS_AGAINST ?=
# Package families from the mirror (docs/offline.md): OFFLINE=1 all, OFFLINE=pypi,maven
# some; unset, each registry is probed and one that does not answer is read from MIRROR.
OFFLINE ?=
MIRROR ?=
export OFFLINE MIRROR
# make mirror: CPython versions to fetch the Python lock files' files for, besides this one's.
PYTHON_VERSIONS ?=

# Forward only the knobs that were set, as --knob value.
knob = $(if $(strip $($(1))),--$(2) '$(strip $($(1)))')
# A target that takes a list of stacks refuses the one-stack knob, rather than run them all.
servers_not_server = @test -z "$(SERVER)" -o -n "$(SERVERS)" || { \
	echo "make $@ takes SERVERS=<a,b>, not SERVER: did you mean SERVERS=$(SERVER)?"; exit 2; }
BENCH_ARGS = --profile '$(PROFILE)' $(call knob,SERVERS,servers) $(call knob,RUNNER,runner) \
	$(call knob,SCENARIOS,scenarios) $(call knob,CONNECTIONS,connections) \
	$(call knob,DURATION,duration) $(call knob,WARMUP,warmup) $(call knob,REPEAT,repeat) \
	$(call knob,SERVER_CPUS,server-cpus) $(call knob,CLIENT_CPUS,client-cpus) \
	$(call knob,SERVER_CPU_QUOTA,server-cpu-quota) $(call knob,SERVER_MEMORY,server-memory) \
	$(call knob,RATE,rate) $(call knob,TOOL,tool) $(call knob,SEED,seed) \
	$(call knob,RESUME,resume) $(call knob,PRIORITY,priority) $(call knob,TIMEOUT,timeout) \
	$(call knob,FRONT,front) $(call knob,TTFB,ttfb) $(call knob,SERVER_CORES,server-cores) \
	$(call knob,HTTP,http) $(call knob,TLS_TOOL,tls-tool) $(call knob,SLO_P99_MS,slo-p99-ms) \
	$(call knob,SLO_PERCENTILE,slo-percentile) $(call knob,SERVER_HOST,server-host) \
	$(call knob,CLIENT_HOSTS,client-hosts)

.PHONY: help
help: ## List every target with one line each
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  make %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo
	@echo "  Knobs: SERVERS=a,b SERVER=x PROFILE=quick RUNNER=auto|native|docker SCENARIOS CONNECTIONS"
	@echo "         DURATION WARMUP REPEAT SERVER_CPUS CLIENT_CPUS SERVER_CPU_QUOTA SERVER_MEMORY"
	@echo "         RATE TOOL SEED PRIORITY TIMEOUT FRONT=none|nginx|apache|self TTFB SERVER_CORES"
	@echo "         HTTP=2|1.1 TLS_TOOL SLO_P99_MS SLO_PERCENTILE RESUME RUN RUNS"
	@echo "  FLAGGED=mark|leave-out (report, compare, aa, ab): rounds flagged COLD, DRIFTED, NOT-STEADY,"
	@echo "          client-bound... are marked (default), or left out of the figures and verdicts"
	@echo "  OFFLINE=1|pypi,maven,... [MIRROR=DIR]: all or some package families from make mirror's"
	@echo "          files; unset, a registry that does not answer in 3 s is read from the mirror"
	@echo "  SERVER_HOST=ctx|ssh://u@h CLIENT_HOSTS=a,b (RUNNER=docker): stacks and load on other"
	@echo "          machines' Docker engines, over SSH (docs/remote.md); NET_DELAY NET_LOSS: test hosts"
	@echo "  RUNNER: make bench uses Docker when a daemon answers (and Compose v2 is present),"
	@echo "          else native; make check is native. RUNNER=docker or RUNNER=native forces it."

.PHONY: bootstrap
bootstrap: ## Install what this machine lacks (Debian packages, tooling venv)
	@bash scripts/bootstrap.sh

.PHONY: list
list: bootstrap ## List the stacks and whether their toolchain is present
	@$(HARNESS) list

.PHONY: serve
serve: bootstrap ## Run one stack natively in the foreground: make serve SERVER=gin [FRONT=nginx|apache|self]
	@test -n "$(SERVER)" || { echo "usage: make serve SERVER=<name>  (make list shows the names)"; exit 2; }
	@$(HARNESS) serve $(SERVER) $(call knob,FRONT,front)

.PHONY: check
check: bootstrap ## Build, start and verify stacks against the contract: make check [SERVERS=gin,sanic] [FRONT=nginx|apache|self] [JOBS=2]
	$(servers_not_server)
	@$(HARNESS) check $(call knob,SERVERS,servers) $(call knob,RUNNER,runner) $(call knob,FRONT,front) \
		$(call knob,SERVER_HOST,server-host) $(call knob,JOBS,jobs)

.PHONY: test
test: ## Every test, as stages (bootstrap first), with one table of their times at the end
	@bash scripts/test.sh

.PHONY: test-fast
test-fast: ## The fast tests alone (no server, no build), as make test's first stages: a minute or two
	@bash scripts/test.sh --fast

.PHONY: bench
bench: bootstrap ## Benchmark stacks and write results/<run-id>/: make bench [PROFILE=quick] [SERVERS=...]
	$(servers_not_server)
	@$(HARNESS) bench $(BENCH_ARGS)

.PHONY: microbench
microbench: bootstrap ## In-process microbenchmarks of every language's contract library, per route and input shape, one table: make microbench [MICROBENCH_LANGUAGES=go,node] [MICROBENCH_ARGS=--rigorous]
	@MICROBENCH_LANGUAGES="$(MICROBENCH_LANGUAGES)" bash scripts/microbench.sh $(MICROBENCH_ARGS)

.PHONY: instructions
instructions: bootstrap ## Instructions per request of every contract library's routes under callgrind, one table (the host's speed does not move them): make instructions [INSTRUCTIONS_AGAINST=docs/measurements/instructions/<table>.tsv]
	@$(PY) scripts/count_instructions.py $(if $(INSTRUCTIONS_AGAINST),--against $(INSTRUCTIONS_AGAINST))

.PHONY: hostile
hostile: bootstrap ## Hostile input (schemathesis, raw-socket cases) against each stack: make hostile [SERVERS=gin,sanic]
	$(servers_not_server)
	@$(HARNESS) hostile $(call knob,SERVERS,servers) $(call knob,SEED,seed)

.PHONY: soak
soak: bootstrap ## Constant rate at 70% of the peak; fails on errors or RSS growth: make soak SERVER=gin [DURATION=10m] [SERVER_CPUS=0 CLIENT_CPUS=1]
	@test -n "$(SERVER)" || { echo "usage: make soak SERVER=<name> [DURATION=10m]  (make list shows the names)"; exit 2; }
	@$(HARNESS) soak --servers '$(SERVER)' --duration '$(or $(strip $(DURATION)),10m)' \
		$(call knob,SERVER_CPUS,server-cpus) $(call knob,CLIENT_CPUS,client-cpus)

.PHONY: report
report: bootstrap ## Regenerate tables, charts and report.html of a run: make report RUN=<id>
	@test -n "$(RUN)" || { echo "usage: make report RUN=<run-id>  (see results/)"; exit 2; }
	@$(HARNESS) report $(RUN)

.PHONY: compare
compare: bootstrap ## Compare two runs, or two stacks of one run (ratio per case with its interval): make compare RUNS=<old>,<new> | RUN=<run> SERVERS=<old>,<new>
	@test -n "$(RUNS)$(RUN)" || { echo "usage: make compare RUNS=<old-run-id>,<new-run-id>, or RUN=<run-id> SERVERS=<old-stack>,<new-stack>  (see results/index.html)"; exit 2; }
	@$(HARNESS) compare $(if $(RUNS),'$(RUNS)','$(RUN)' --stacks '$(SERVERS)')

.PHONY: then-and-now
then-and-now: bootstrap ## Judge the four experiments' claims on the committed runs; writes docs/measurements/then-and-now.md and the handouts
	@$(HARNESS) then-and-now

.PHONY: measurements
measurements: bootstrap ## Write again the summaries and A/B pages of the runs committed under docs/measurements, by the report's rules as they stand
	@$(HARNESS) measurements

.PHONY: aa
aa: bootstrap ## A/A: the same bench AA_RUNS times (4), every pair compared, the false-alarm rate: make aa PROFILE=smoke REPEAT=3 SERVERS=a,b,c [RUNS=<run>,<run>,...]
	$(servers_not_server)
	@$(HARNESS) aa $(BENCH_ARGS) $(call knob,AA_RUNS,times) $(call knob,RUNS,runs)

.PHONY: ab
ab: bootstrap ## Interleaved A/B: two commits or settings of one stack in the same rounds, compared: make ab SERVER=gin A=HEAD~1 [B='WORKERS=2'] [REPEAT=5]
	@test -n "$(SERVER)" -a -n "$(A)$(B)" || { echo "usage: make ab SERVER=<stack> A=<revision and/or NAME=value ...> [B=...]  (B empty: the working tree; docs/methodology.md, \"Is it a change?\")"; exit 2; }
	@$(HARNESS) ab '$(SERVER)' --a '$(A)' --b '$(B)' $(BENCH_ARGS)

.PHONY: new-server
new-server: bootstrap ## Create servers/<name>/ from a template, a stub answering 501: make new-server NAME=x LANG=go|python|java|node|rust|csharp|other
	@test -n "$(NAME)" -a "$(origin LANG)" = "command line" || { echo "usage: make new-server NAME=<name> LANG=<go|python|java|node|rust|csharp|other> [DISPLAY_NAME='...']  (LANG on the make command line; see docs/adding-a-server.md)"; exit 2; }
	@LANG=C.UTF-8 $(HARNESS) new-server '$(NAME)' --lang '$(LANG)' $(if $(DISPLAY_NAME),--display-name '$(subst ','\'',$(DISPLAY_NAME))')

.PHONY: lab
lab: bootstrap ## Run a teaching lab's measurements and print where its report is: make lab LAB=1..5 (docs/labs/)
	$(servers_not_server)
	@test -n "$(LAB)" || { $(HARNESS) lab --list; exit 2; }
	@$(HARNESS) lab '$(LAB)'

.PHONY: build
build: bootstrap ## Build stack images (and the loadgen) with docker compose: make build [SERVERS=gin,sanic]
	$(servers_not_server)
	@$(PY) -m loadtest docker build $(call knob,SERVERS,servers) $(call knob,SERVER_HOST,server-host) \
		$(call knob,CLIENT_HOSTS,client-hosts)

.PHONY: up
up: bootstrap ## Start one stack's container with the limits knobs: make up SERVER=gin [SERVER_CPUS=0]
	@test -n "$(SERVER)" || { echo "usage: make up SERVER=<name>  (make list shows the names)"; exit 2; }
	@$(PY) -m loadtest docker up '$(SERVER)' $(call knob,SERVER_CPUS,server-cpus) \
		$(call knob,SERVER_CPU_QUOTA,server-cpu-quota) $(call knob,SERVER_MEMORY,server-memory)

.PHONY: down
down: bootstrap ## Stop and remove every serverlab container
	@$(PY) -m loadtest docker down

.PHONY: logs
logs: bootstrap ## Show a stack container's output: make logs SERVER=gin
	@test -n "$(SERVER)" || { echo "usage: make logs SERVER=<name>"; exit 2; }
	@$(PY) -m loadtest docker logs '$(SERVER)'

.PHONY: compose
compose: bootstrap ## Regenerate docker-compose.yml from the manifests (commit the result)
	@$(PY) -m loadtest docker compose

.PHONY: docker-lint
docker-lint: bootstrap ## hadolint every Dockerfile and validate docker-compose.yml with Compose v2
	@$(PY) -m loadtest docker lint

.PHONY: docker-smoke
docker-smoke: bootstrap ## Real images on local stand-ins, conformance and a smoke bench in containers: make docker-smoke [SERVERS=a,b|all]
	$(servers_not_server)
	@$(PY) -m loadtest docker smoke $(call knob,SERVERS,servers)

.PHONY: remote-smoke
remote-smoke: bootstrap ## Stacks on a test host, load from two others, over SSH Docker contexts: make remote-smoke [NET_DELAY=5ms] [NET_LOSS=0.1%]
	@$(PY) -m loadtest remote-smoke $(call knob,SERVERS,servers) $(call knob,NET_DELAY,delay) $(call knob,NET_LOSS,loss)

.PHONY: testhosts-up
testhosts-up: bootstrap ## Test hosts on this machine for SERVER_HOST/CLIENT_HOSTS (docs/remote.md): make testhosts-up [NET_DELAY=2ms]
	@$(PY) -m loadtest testhosts up $(call knob,NET_DELAY,delay) $(call knob,NET_LOSS,loss)

.PHONY: testhosts-down
testhosts-down: bootstrap ## Remove the test hosts, their engines, keys and contexts
	@$(PY) -m loadtest testhosts down

.PHONY: calendar
calendar: bootstrap ## Regenerate contracts/calendar from exchange-calendars (XSHG)
	@$(PY) contracts/calendar/generate.py

.PHONY: vectors
vectors: bootstrap ## Regenerate contracts/vectors/workday.json from exchange-calendars
	@$(PY) contracts/vectors/generate.py

# The pip-tools that compiles every Python lock file: the harness's and the stacks'.
PIPTOOLS_VERSION := 7.6.2

.PHONY: lock
lock: ## Re-lock the harness's own tooling, requirements-dev.txt (with hashes), from requirements-dev.in
	@test "$(OFFLINE)" != 1 || { echo "make lock resolves against PyPI: run it online"; exit 2; }
	@python3 -m venv .build/piptools && .build/piptools/bin/pip install -q pip-tools==$(PIPTOOLS_VERSION)
	@.build/piptools/bin/pip-compile -q --generate-hashes --strip-extras --no-emit-find-links \
		--output-file requirements-dev.txt requirements-dev.in

.PHONY: lock-stack
lock-stack: bootstrap ## Re-lock a Python stack's requirements files, under the Python it runs on: make lock-stack SERVER=x [UPGRADE=1]
	@test -n "$(SERVER)" || { echo "usage: make lock-stack SERVER=<python stack> [UPGRADE=1]"; exit 2; }
	@test "$(OFFLINE)" != 1 || { echo "make lock-stack resolves against PyPI: run it online"; exit 2; }
	@$(HARNESS) lock-stack '$(SERVER)' --pip-tools $(PIPTOOLS_VERSION) $(if $(filter 1,$(UPGRADE)),--upgrade)

.PHONY: mirror
mirror: bootstrap ## Fill the package mirror (.cache/mirror/ or MIRROR=DIR): make mirror [SERVERS=gin,sanic] [PYTHON_VERSIONS=3.11,3.13]
	@$(HARNESS) mirror $(call knob,SERVERS,servers) $(call knob,PYTHON_VERSIONS,python-versions)

.PHONY: clean
clean: ## Remove build outputs (.build/); keeps results/ and .venv
	rm -rf .build
