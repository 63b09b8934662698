# BLELab — build, test and benchmark entry points. See README.md.
SWIFT ?= swift
BUILD_DIR ?= build
SWIFT_FLAGS ?=
PYTHON3 ?= python3
# Every release build (benchmarks, the vhci/BlueZ/container tiers) uses the same flags, so that one
# build serves them all: tools/release-flags (docs/architecture.md, "Release builds").
RELEASE := $(shell cat tools/release-flags)

.PHONY: all deps build test e2e bench clean venv rootcanal-smoke bumble-smoke tiers-smoke \
	test-tiers e2e-rootcanal e2e-bumble e2e-socket bench-tiers \
	vm-fetch vm-probe vm-probe-bin e2e-vhci bench-vhci e2e-bluez e2e-docker bench-docker e2e-all soak

all: build

# The Debian packages the build and tests need beyond Swift (libdbus-1-dev, pkg-config and
# dbus-daemon, for the DBus module and its tests); apt-installs the missing ones, else quiet.
# Every target that builds Swift depends on it (directly, or through a make it runs); the
# others install what they need themselves (vm/fetch.sh: QEMU, btvirt, bluez; venv:
# python3-venv; vm-probe-bin: libc6-dev; soak: stress-ng).
deps:
	@bash tools/install-deps.sh

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)

# Unit tests of every layer plus the in-process end-to-end tests (a few minutes at most).
# TierTests need RootCanal and Bumble (the venv): `make test-tiers` runs them. Ends with the
# failed tests by name and one line `N passed, N failed`, counted from the xUnit results
# (TEST_RESULTS); fails when a test failed or none ran.
TEST_RESULTS ?= $(BUILD_DIR)/test/xunit.xml
TEST_RESULTS_ST = $(basename $(TEST_RESULTS))-swift-testing.xml
# tshark: CaptureInteropTests read the captures with it too, and check tools/att-check.sh.
test: deps ci-lint check-edges
	@bash tools/install-deps.sh tshark
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	@$(MAKE) --no-print-directory schema-check junit-check test-tsan SKIP_BUILD=1
	@mkdir -p $(dir $(TEST_RESULTS)) && rm -f $(TEST_RESULTS) $(TEST_RESULTS_ST)
	@echo "$(SWIFT) test --skip-build --parallel --skip TierTests --xunit-output $(TEST_RESULTS) $(SWIFT_FLAGS)"
	@status=0; $(SWIFT) test --skip-build --parallel --skip TierTests --xunit-output $(TEST_RESULTS) $(SWIFT_FLAGS) || status=$$?; \
	$(PYTHON3) tools/test-summary.py --status $$status $(TEST_RESULTS) $(TEST_RESULTS_ST)

# The CoreBluetoothLab tests that call the API from several threads and tasks while the loop runs
# (TSAN_FILTER), under the thread sanitizer: BLELAB_TSAN=1 keeps only the targets they need
# (Package.swift), built with --sanitize thread into TSAN_BUILD_DIR. A data race reported fails it
# (halt_on_error). Part of `make test`; a minute or two once the sanitized build exists.
.PHONY: test-tsan
TSAN_BUILD_DIR ?= $(BUILD_DIR)/tsan
TSAN_FILTER ?= ThreadSafetyTests|AsyncLabTests|HM10AsyncExampleTests
test-tsan: deps
	BLELAB_TSAN=1 $(SWIFT) build --build-tests --sanitize thread --build-path $(TSAN_BUILD_DIR) $(SWIFT_FLAGS)
	BLELAB_TSAN=1 TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --skip-build --sanitize thread --build-path $(TSAN_BUILD_DIR) \
		--filter '$(TSAN_FILTER)' $(SWIFT_FLAGS)

# The scenario format's JSON Schema (docs/editors.md), made from the schema code by `blelab schema`:
# `make schema` writes it to schema/blelab-scenario.schema.json (commit it; a unit test fails
# while the shipped file is not the generated one). `make schema-check` (part of `make test`):
# the shipped file is `blelab schema`'s; every scenario in scenarios/ (and schema/tests/*.yaml)
# validates with check-jsonschema; the broken fixtures fail as schema/tests/broken-fixtures.txt
# says. `make junit-check` (part of `make test`): what `blelab run --junit` writes, read by
# junitparser (tools/check-junit.py). Both tools come from PyPI, pinned in
# tools/requirements-test.txt, in a venv under the build folder (TEST_VENV, made once).
.PHONY: schema schema-check junit-check test-venv
TEST_VENV ?= $(BUILD_DIR)/test-venv
SKIP_BUILD ?=
BLELAB_BUILD = $(if $(SKIP_BUILD),@true,$(SWIFT) build --product blelab $(SWIFT_FLAGS))
schema: deps
	$(SWIFT) build --product blelab $(SWIFT_FLAGS)
	$(BLELAB) schema > schema/blelab-scenario.schema.json

test-venv:
	@PYTHON3=$(PYTHON3) bash tools/test-venv.sh $(TEST_VENV)

schema-check: test-venv
	$(BLELAB_BUILD)
	$(TEST_VENV)/bin/python tools/check-scenario-schema.py --blelab $(BLELAB) --check-jsonschema $(TEST_VENV)/bin/check-jsonschema

junit-check: test-venv
	$(BLELAB_BUILD)
	$(TEST_VENV)/bin/python tools/check-junit.py --blelab $(BLELAB) --out $(BUILD_DIR)/junit-check

# The CI examples (examples/ci/, docs/ci.md): yamllint --strict (Debian's, apt-installed when
# missing), GitHub's and GitLab's schemas (check-jsonschema from PyPI, in a venv under
# build/ci-lint/), and merge-junit.py's tests. Part of `make test`.
.PHONY: ci-lint
ci-lint:
	@bash examples/ci/lint.sh

# Package.swift states the real module graph: every import of a target's sources is a declared
# dependency, and every declared dependency is imported (tools/check-package-edges.py, which reads
# the package through `swift package dump-package`). Also fails when docs/architecture.dot is not
# the graph Package.swift gives, or docs/architecture.svg was not rendered from it (make graph).
# Needs no Graphviz. Part of `make test`.
.PHONY: check-edges
check-edges:
	@SWIFT=$(SWIFT) $(PYTHON3) tools/check-package-edges.py
	@SWIFT=$(SWIFT) $(PYTHON3) tools/package-graph.py --check $(GRAPH_FILES)

# The picture of the module graph in docs/architecture.md, from Package.swift
# (tools/package-graph.py): docs/architecture.dot, rendered by Graphviz's dot (Debian graphviz,
# apt-installed when missing) to docs/architecture.svg. Run it after changing Package.swift's edges.
.PHONY: graph
GRAPH_FILES = --dot docs/architecture.dot --svg docs/architecture.svg
graph:
	@command -v dot >/dev/null 2>&1 || bash tools/install-deps.sh graphviz
	SWIFT=$(SWIFT) $(PYTHON3) tools/package-graph.py $(GRAPH_FILES)

# The main job: every scenario in scenarios/ on the embedded sim tier, with a JUnit report, a
# JSON timeline, an HTML report (report.html, docs/report.md) and one btsnoop capture per device
# per scenario under build/e2e/.
# A failing scenario makes it fail (exit 1); a broken scenario file too (exit 2).
E2E_DIR ?= $(BUILD_DIR)/e2e
e2e: deps
	$(SWIFT) build --product blelab $(SWIFT_FLAGS)
	rm -rf $(E2E_DIR) && mkdir -p $(E2E_DIR)
	$$($(SWIFT) build --show-bin-path $(SWIFT_FLAGS))/blelab run scenarios \
		--junit $(E2E_DIR)/junit.xml --json $(E2E_DIR)/timeline.json --html $(E2E_DIR)/report.html \
		--capture $(E2E_DIR)/captures \
		--capture-air $(E2E_DIR)/air

# The HTML report in a real browser (docs/report.md): headless Chromium (Debian chromium,
# apt-installed when missing) loads make e2e's report.html and that of a failing run the check makes
# (a hostile scenario name, a chart of thousands of rows): no console message, the summary there, the
# failure first with its chart, one page of rows, a screenshot not all one colour (tools/report-check.py).
.PHONY: report-check
REPORT_CHECK_DIR ?= $(BUILD_DIR)/report-check
report-check: deps e2e
	@command -v chromium >/dev/null 2>&1 || bash tools/install-deps.sh chromium
	$(PYTHON3) tools/report-check.py $$($(SWIFT) build --show-bin-path $(SWIFT_FLAGS))/blelab $(REPORT_CHECK_DIR) $(E2E_DIR)/report.html

# Figures, one per line, `name: value unit`. Release build; never part of `make test`.
# BENCH_QUICK=1: every figure from fewer rounds (`blelab-bench --quick`), for CI; the figures to
# quote come from a plain `make bench`.
BENCH_QUICK ?=
bench: deps
	$(SWIFT) build $(RELEASE) --product blelab-bench $(SWIFT_FLAGS)
	$$($(SWIFT) build $(RELEASE) --show-bin-path $(SWIFT_FLAGS))/blelab-bench $(if $(filter 1 yes,$(BENCH_QUICK)),--quick) scenarios

# Socket tier (docs/tiers.md): a venv with RootCanal 1.10.0 and Bumble (pinned in
# tools/requirements-tiers.txt); blelab starts, waits for and stops the controller processes
# itself (logs in build/tiers/logs). Real controllers run in real time: a suite takes ~90 s.
VENV ?= $(BUILD_DIR)/venv
# Where blelab and the tests find the venv and put the helpers' logs.
TIER_ENV = BUILD_DIR=$(abspath $(BUILD_DIR)) VENV=$(abspath $(VENV))
BLELAB = $$($(SWIFT) build --show-bin-path $(SWIFT_FLAGS))/blelab

# python3-venv (ensurepip) is apt-installed when the interpreter lacks it.
venv:
	@$(PYTHON3) -c 'import ensurepip, venv' 2>/dev/null || bash tools/install-deps.sh python3-venv
	BUILD_DIR=$(BUILD_DIR) VENV=$(VENV) PYTHON=$(PYTHON3) bash tools/setup-venv.sh

# TierTests: interop with Bumble's host stack, captures in tshark, faults, process cleanup,
# the --transport values. Makes the venv first; without it they fail saying so.
test-tiers: deps venv
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(TIER_ENV) $(SWIFT) test --skip-build --filter TierTests $(SWIFT_FLAGS)

# Every scenario on RootCanal / on Bumble's controllers: JUnit, timeline and captures under
# build/e2e-rootcanal/ and build/e2e-bumble/, as `make e2e` does for the sim. TIER_JOBS scenarios
# at a time (`blelab run --jobs`), each job on a RootCanal or Bumble process of its own (its own
# air); the controllers run in real time and mostly wait, so more jobs than cores pay
# (docs/tiers.md, "Scenarios in parallel"). TIER_JOBS=1: one at a time.
E2E_ROOTCANAL_DIR ?= $(BUILD_DIR)/e2e-rootcanal
E2E_BUMBLE_DIR ?= $(BUILD_DIR)/e2e-bumble
TIER_JOBS ?= 4
e2e-rootcanal: deps venv
	$(SWIFT) build --product blelab $(SWIFT_FLAGS)
	rm -rf $(E2E_ROOTCANAL_DIR) && mkdir -p $(E2E_ROOTCANAL_DIR)
	$(TIER_ENV) $(BLELAB) run scenarios --transport rootcanal --jobs $(TIER_JOBS) \
		--junit $(E2E_ROOTCANAL_DIR)/junit.xml --json $(E2E_ROOTCANAL_DIR)/timeline.json --capture $(E2E_ROOTCANAL_DIR)/captures

e2e-bumble: deps venv
	$(SWIFT) build --product blelab $(SWIFT_FLAGS)
	rm -rf $(E2E_BUMBLE_DIR) && mkdir -p $(E2E_BUMBLE_DIR)
	$(TIER_ENV) $(BLELAB) run scenarios --transport bumble --jobs $(TIER_JOBS) \
		--junit $(E2E_BUMBLE_DIR)/junit.xml --json $(E2E_BUMBLE_DIR)/timeline.json --capture $(E2E_BUMBLE_DIR)/captures

# Both, each run to the end even when the other failed; fails when either did.
e2e-socket: venv
	@status=0; $(MAKE) --no-print-directory e2e-rootcanal || status=1; \
	$(MAKE) --no-print-directory e2e-bumble || status=1; exit $$status

# The hostile peer (docs/tiers.md, "A hostile peer"): Bumble on RootCanal sends malformed and
# out-of-order L2CAP, LE signaling, SMP and ATT to `blelab hostile`, HOSTILE_ROUNDS seeded rounds
# per role (BLELab as peripheral, then as central) from HOSTILE_SEED; prints the hostile_* figures
# and fails on a crash, a hang, an unreported violation, an unexpected report or a wrong answer.
# The default takes ~30 s; timelines and report.json in build/hostile/.
.PHONY: hostile
HOSTILE_ROUNDS ?= 100
HOSTILE_SEED ?= 1
hostile: deps venv
	$(SWIFT) build --product blelab $(SWIFT_FLAGS)
	$(TIER_ENV) $(VENV)/bin/python tools/hostile_peer.py --blelab $(BLELAB) \
		--rounds $(HOSTILE_ROUNDS) --seed $(HOSTILE_SEED) --out $(BUILD_DIR)/hostile

# Per tier: helper start/stop, one scan→notify flow, the whole suite with --jobs TIER_JOBS
# (suite_rootcanal_s, suite_bumble_s), in wall time (release build). BENCH_TIERS_SERIAL=yes adds
# the suite one scenario at a time (rootcanal_suite_wall_s, …) to compare. BENCH_TIERS_SUITE=no
# leaves out the suite figures: .ci/run does, since `make e2e-socket` has just run both suites.
BENCH_TIERS_SUITE ?= yes
BENCH_TIERS_SERIAL ?= no
bench-tiers: deps venv
	$(SWIFT) build $(RELEASE) --product blelab-bench $(SWIFT_FLAGS)
	$(TIER_ENV) $$($(SWIFT) build $(RELEASE) --show-bin-path $(SWIFT_FLAGS))/blelab-bench --tiers rootcanal,bumble \
		--jobs $(TIER_JOBS) $(if $(filter no,$(BENCH_TIERS_SUITE)),--no-suite) $(if $(filter yes,$(BENCH_TIERS_SERIAL)),--serial-suite) scenarios

# One small scenario on each tier's controllers, which blelab starts and stops itself: power-on,
# advertising, scanning, LE Create Connection, discovery, a write and its notification over ACL,
# Disconnect. RootCanal; Bumble's controllers over TCP and over unix sockets.
SMOKE_SCENARIO ?= scenarios/seeds/hm10-serial.yaml
rootcanal-smoke: deps venv
	$(SWIFT) build --product blelab $(SWIFT_FLAGS)
	$(TIER_ENV) $(BLELAB) run --transport rootcanal $(SMOKE_SCENARIO)

bumble-smoke: deps venv
	$(SWIFT) build --product blelab $(SWIFT_FLAGS)
	$(TIER_ENV) $(BLELAB) run --transport bumble $(SMOKE_SCENARIO)
	$(TIER_ENV) $(BLELAB) run --transport bumble:unix $(SMOKE_SCENARIO)

tiers-smoke: rootcanal-smoke bumble-smoke

# The vhci tier: Linux virtual controllers (btvirt over /dev/vhci) in a micro-VM, for machines
# whose kernel has no Bluetooth (docs/vhci.md). vm-fetch brings Debian's kernel, modules and
# busybox into build/vm (and apt-installs qemu-system-x86 and bluez-test-tools when missing);
# vm-probe proves the VM with a C program on the HCI user channel; e2e-vhci runs the scenarios.
VM_DIR ?= $(BUILD_DIR)/vm
VM_PROBE_N ?= 3
vm-fetch:
	vm/fetch.sh

vm-probe-bin: $(VM_DIR)/probe/hci_reset
$(VM_DIR)/probe/hci_reset: vm/probe/hci_reset.c
	@bash tools/install-deps.sh libc6-dev
	mkdir -p $(dir $@)
	$(CC) -O2 -Wall -Wextra -static -o $@ $<

# hciN each answer Reset; hci0 advertises, hci1 scans and connects to it (ACL both ways), the
# rest advertise too. Prints vm_boot_s (qemu start → controllers ready).
vm-probe: vm-probe-bin
	vm/run.sh $(VM_PROBE_N) -- bash -c '$(abspath $(VM_DIR))/probe/hci_reset reset $${BLELAB_HCI//,/ } && \
		$(abspath $(VM_DIR))/probe/hci_reset link $${BLELAB_HCI//,/ }'

# Every scenario on btvirt's controllers in the VM: build/e2e-vhci/junit.xml and captures/.
# VHCI_JOBS scenarios at a time, each on a group of controllers of its own (one btvirt, one air,
# per group: vm/guest-run.sh -g). The VM's two emulated CPUs run every job's host stack.
VHCI_JOBS ?= 3
e2e-vhci: deps
	SWIFT=$(SWIFT) VHCI_JOBS=$(VHCI_JOBS) vm/e2e-vhci.sh scenarios

# The vhci tier's figures, in the micro-VM (software emulation here, so the host stack itself
# runs far slower than on the host): vm_boot_s, one scan→notify flow, the whole suite with
# --jobs VHCI_JOBS (suite_vhci_s; VHCI_JOBS groups of controllers, one btvirt each);
# BENCH_TIERS_SERIAL=yes adds it one at a time (vhci_suite_wall_s); BENCH_TIERS_SUITE=no leaves
# the suite out (.ci/run: make e2e-docker has just run it in the container, and prints its
# suite_vhci_s).
bench-vhci: deps
	$(SWIFT) build $(RELEASE) --product blelab-bench $(SWIFT_FLAGS)
	$(SWIFT) build $(RELEASE) --product blelab $(SWIFT_FLAGS)
	@n=$$($$($(SWIFT) build $(RELEASE) --show-bin-path $(SWIFT_FLAGS))/blelab list --controllers scenarios); \
	groups=$$(for g in $$(seq 0 $$(($(VHCI_JOBS) - 1))); do seq -s, $$((g * n)) $$((g * n + n - 1)); done | paste -sd/); \
	vm/run.sh --guest-arg -g$(VHCI_JOBS) $$n -- $$($(SWIFT) build $(RELEASE) --show-bin-path $(SWIFT_FLAGS))/blelab-bench \
		--tier hci-user:$$groups --jobs $(VHCI_JOBS) $(if $(filter no,$(BENCH_TIERS_SUITE)),--no-suite) \
		$(if $(filter yes,$(BENCH_TIERS_SERIAL)),--serial-suite) scenarios

# BlueZ (bluetoothd over D-Bus) as the central, then as the peripheral, of the seed scenarios and
# scenarios/bluez, then vm/bluez/own-central, the Python libraries of examples/bluez-python (bleak,
# SimpleBLE, bless: pip-installed into build/pyclients-venv first) and vm/bluez/failures, in the
# micro-VM: build/e2e-bluez/ (docs/vhci.md, docs/bluez.md).
e2e-bluez: deps
	SWIFT=$(SWIFT) vm/e2e-bluez.sh

# Every tier: the sim, RootCanal and Bumble over sockets, btvirt in the micro-VM, BlueZ there.
# Each runs to the end even when another failed; fails when any did.
e2e-all:
	@status=0; $(MAKE) --no-print-directory e2e || status=1; \
	$(MAKE) --no-print-directory e2e-socket || status=1; \
	$(MAKE) --no-print-directory e2e-vhci || status=1; \
	$(MAKE) --no-print-directory e2e-bluez || status=1; exit $$status

# The cross-tier report: every scenario's verdict on the sim, RootCanal, Bumble and vhci, from the
# JUnit files of e2e, e2e-socket and e2e-vhci (run those first). One line per scenario whose
# verdict differs (MISMATCH) or that a tier skipped or lacks, then verdict_mismatches: N; fails
# when a verdict differs, or when a file is missing.
.PHONY: verdicts
E2E_VHCI_DIR ?= $(BUILD_DIR)/e2e-vhci
verdicts: deps
	$(SWIFT) build --product blelab $(SWIFT_FLAGS)
	$(BLELAB) verdicts sim=$(E2E_DIR)/junit.xml rootcanal=$(E2E_ROOTCANAL_DIR)/junit.xml \
		bumble=$(E2E_BUMBLE_DIR)/junit.xml vhci=$(E2E_VHCI_DIR)/junit.xml

# The vhci and BlueZ tiers in a container (docs/vhci.md): installs docker.io and debootstrap when
# missing, starts a private dockerd when none answers, makes a Debian base image without a
# registry (cached in build/docker/base/), builds docker/Dockerfile, runs every scenario and the
# BlueZ parts in it (the host's /dev/vhci, else the micro-VM inside the container) into
# build/e2e-docker/, and removes the containers, images and dockerd it made, also when interrupted
# (`exec`: a SIGTERM that make passes on reaches the script itself, not a shell in between).
e2e-docker: deps
	SWIFT=$(SWIFT) VHCI_JOBS=$(VHCI_JOBS) exec docker/e2e-docker.sh

# The same set-up and the vhci suite only: docker_image_build_s, docker_image_mb, docker_start_s
# (docker run → controllers ready), docker_suite_s; results in build/bench-docker/.
bench-docker: deps
	SWIFT=$(SWIFT) VHCI_JOBS=$(VHCI_JOBS) exec docker/e2e-docker.sh --bench

# Flakes, under load: `make test` SOAK_RUNS times in a row while stress-ng keeps every core
# busy, then every scenario in scenarios/ SOAK_REPEATS times on the sim (--repeat), twice, so
# that each scenario+seed runs twice. Prints flaky_tests (tests that failed in some runs but not
# all, named) and scenario_flakes (scenario+seed whose verdict varied, or that failed); fails
# unless both are 0 (and no test failed in every run). Hours with the defaults; not in .ci/run.
SOAK_RUNS ?= 20
SOAK_REPEATS ?= 1000
SOAK_DIR ?= $(BUILD_DIR)/soak
# (The recipe leaves the MAKE variable out: make -n runs a line that names it, soak and all.)
soak: deps
	@bash tools/install-deps.sh stress-ng
	SWIFT=$(SWIFT) PYTHON3=$(PYTHON3) SOAK_RUNS=$(SOAK_RUNS) SOAK_REPEATS=$(SOAK_REPEATS) \
		SOAK_DIR=$(SOAK_DIR) SWIFT_FLAGS="$(SWIFT_FLAGS)" bash tools/soak.sh

# Coverage-guided fuzzing (docs/fuzzing.md): one libFuzzer harness per decoder that reads outside
# input (Fuzzing/), built with -sanitize=fuzzer,address (release, into FUZZ_DIR; the normal build
# never sees them: Package.swift declares them only when BLELAB_FUZZ=1). Seeds come from the
# tests' captures, the sim's captures of the scenarios when `make e2e` left them, and the scenario
# files. `make fuzz` runs each target FUZZ_SECONDS on one core, FUZZ_JOBS at a time (default: one per
# core), and prints fuzz_<target>_execs,
# fuzz_<target>_execs_total (all runs so far, FUZZ_DIR/tally) and fuzz_<target>_crashes; findings
# go to FUZZ_DIR/artifacts/<target>/ and make it fail. `make fuzz-smoke`: 10 s per target, for CI.
.PHONY: fuzz fuzz-smoke fuzz-build fuzz-seeds
FUZZ_SECONDS ?= 60
FUZZ_DIR ?= $(BUILD_DIR)/fuzz
FUZZ_TARGETS ?= h4 hci-event hci-command l2cap att-pdu gatt-client gatt-server advertising-data yaml scenario \
	btsnoop packetlogger pcap air dbus capture-import host smp
FUZZ_SWIFT = BLELAB_FUZZ=1 $(SWIFT) build --build-path $(FUZZ_DIR) -c release \
	--sanitize fuzzer --sanitize address -Xswiftc -sanitize=fuzzer,address $(SWIFT_FLAGS)
fuzz-build: deps
	@for t in $(FUZZ_TARGETS); do echo "fuzz-build: fuzz-$$t"; $(FUZZ_SWIFT) --product fuzz-$$t >$(FUZZ_DIR).log 2>&1 \
		|| { cat $(FUZZ_DIR).log; exit 1; }; done
fuzz-seeds:
	$(PYTHON3) tools/fuzz-seeds.py $(FUZZ_DIR)/seeds Tests/TransportTests/Fixtures $(wildcard $(E2E_DIR)/captures) $(wildcard $(E2E_DIR)/air)
fuzz: fuzz-build fuzz-seeds
	FUZZ_DIR=$(FUZZ_DIR) FUZZ_BIN=$$($(FUZZ_SWIFT) --show-bin-path) tools/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)
fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=10

clean:
	rm -rf .build $(BUILD_DIR)
