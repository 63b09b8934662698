# BLELab — build, test and benchmark entry points. See README.md.
SWIFT ?= swift
BUILD_DIR ?= build
SWIFT_FLAGS ?=

.PHONY: all build test e2e bench clean venv rootcanal-smoke bumble-smoke tiers-smoke

all: build

build:
	$(SWIFT) build $(SWIFT_FLAGS)

# Unit tests of every layer plus the in-process end-to-end tests (a few minutes at most).
test:
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build --parallel $(SWIFT_FLAGS)

# The main job: every scenario in scenarios/ on the embedded sim tier, with a JUnit report, a
# JSON timeline and one btsnoop capture per device per scenario under build/e2e/.
# A failing scenario makes it fail (exit 1); a broken scenario file too (exit 2).
E2E_DIR ?= $(BUILD_DIR)/e2e
e2e:
	$(SWIFT) build --product blelab $(SWIFT_FLAGS)
	rm -rf $(E2E_DIR) && mkdir -p $(E2E_DIR)
	$$($(SWIFT) build --show-bin-path $(SWIFT_FLAGS))/blelab run scenarios \
		--junit $(E2E_DIR)/junit.xml --json $(E2E_DIR)/timeline.json --capture $(E2E_DIR)/captures

# Figures, one per line, `name: value unit`. Release build; never part of `make test`.
bench:
	$(SWIFT) build -c release --product blelab-bench $(SWIFT_FLAGS)
	$$($(SWIFT) build -c release --show-bin-path $(SWIFT_FLAGS))/blelab-bench scenarios

# Socket tier helpers (docs/tiers.md): a venv with RootCanal 1.10.0 and Bumble (pinned in
# tools/requirements-tiers.txt), and smoke runs of the probes against freshly started
# controllers, cleaned up on success, failure and Ctrl-C. The Swift transport joins them later.
PYTHON3 ?= python3
VENV ?= $(BUILD_DIR)/venv
WITH_CONTROLLERS = $(PYTHON3) tools/with_controllers.py --venv $(VENV) --log-dir $(BUILD_DIR)/tiers/logs

venv:
	BUILD_DIR=$(BUILD_DIR) VENV=$(VENV) PYTHON=$(PYTHON3) bash tools/setup-venv.sh

# RootCanal: h4probe drives two controllers (two connections to its HCI port) through BLELab's
# power-on, legacy advertising, scanning, LE Create Connection, ACL both ways and Disconnect;
# then a Bumble central and a Bumble peripheral interoperate through it.
rootcanal-smoke: venv
	$(WITH_CONTROLLERS) rootcanal -- $(PYTHON3) tools/h4probe.py pair {ep0} {ep1}
	$(WITH_CONTROLLERS) rootcanal -- {python} tools/interop_pair.py {ep0} {ep1}

# Bumble: the same against two controllers on one LocalLink, over TCP and over unix sockets.
bumble-smoke: venv
	$(WITH_CONTROLLERS) bumble 2 -- $(PYTHON3) tools/h4probe.py pair {ep0} {ep1}
	$(WITH_CONTROLLERS) bumble 2 --unix -- $(PYTHON3) tools/h4probe.py pair {ep0} {ep1}
	$(WITH_CONTROLLERS) bumble 2 -- {python} tools/interop_pair.py {ep0} {ep1}

tiers-smoke: rootcanal-smoke bumble-smoke

clean:
	rm -rf .build $(BUILD_DIR)
