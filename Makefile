# BLELab — build, test and benchmark entry points. See README.md.
SWIFT ?= swift
BUILD_DIR ?= build
SWIFT_FLAGS ?=

.PHONY: all build test e2e bench clean

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

clean:
	rm -rf .build $(BUILD_DIR)
