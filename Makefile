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

# The main job: end-to-end runs on the embedded sim tier. Until the scenario CLI lands this
# runs the end-to-end Swift tests (three simulated peripherals and a central on one air).
e2e:
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build --filter 'BLELabTests' $(SWIFT_FLAGS)

# Figures, one per line, `name: value unit`. Release build; never part of `make test`.
bench:
	$(SWIFT) build -c release --product blelab-bench $(SWIFT_FLAGS)
	$$($(SWIFT) build -c release --show-bin-path $(SWIFT_FLAGS))/blelab-bench

clean:
	rm -rf .build $(BUILD_DIR)
