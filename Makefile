# llm-fuse: the two entry points of the README, and a few helpers.
#
#   make demo    install what is missing, build, run the main job offline
#   make check   install what is missing, build, run unit tests and lit
#
# Both start from nothing on a fresh Debian 12 machine.

BUILD ?= build
CMAKE_FLAGS ?=

.PHONY: all demo check deps configure build clean

all: build

deps:
	@bash scripts/setup-deps.sh

configure: deps
	@if [ ! -f $(BUILD)/build.ninja ]; then \
	  cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS); \
	fi

build: configure
	cmake --build $(BUILD)

check: build
	cmake --build $(BUILD) --target check

demo: build
	@bash scripts/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD)
