# The README's two entry points, and the tools around them.
#   make tutorial   build, run every chapter on the GPU, regenerate plots/data, the charts and the tables (PART=gemm|conv|gcn: one part)
#   make test       build everything and run every test (GPU self-tests are skipped without a GPU)
#   make profile CHAPTER=01 [PROFILE_ARGS="--m 4096 --n 4096 --k 4096", "--layer NAME" or "--graph FILE"]   Nsight Compute on one chapter
#   make sanitize   compute-sanitizer (memcheck, racecheck, synccheck) over every chapter's small self-test (PART= as above; STEPS="NN_name ...": only those)
#   make figures    redraw the chapters' explanatory pictures
# PRESET=release|debug|ci chooses the CMake preset (build/<preset>); JOBS sets build parallelism.

PRESET ?= release
BUILD := build/$(PRESET)
JOBS ?= $(shell nproc 2>/dev/null || echo 4)
CHAPTER ?= 01
PROFILE_ARGS ?=
STEPS ?=
PART ?= all
PYTHON = "$$(cat build/python)"

.PHONY: help deps configure build test tutorial gpu-check figures profile sanitize clean

help:
	@sed -n '2,8p' Makefile | sed 's/^# \{0,1\}//'

deps:
	@scripts/deps.sh

configure: deps
	cmake --preset $(PRESET) -DTUT_PYTHON="$$(cat build/python)"

build: configure
	cmake --build --preset $(PRESET) -j $(JOBS)

test: build
	ctest --preset $(PRESET)

gpu-check:
	@nvidia-smi -L >/dev/null 2>&1 || { echo "make tutorial needs an NVIDIA GPU and its driver, and nvidia-smi finds none on this machine."; exit 1; }

tutorial: gpu-check build
	$(PYTHON) plots/bench.py --manifest $(BUILD)/chapters.tsv --part $(PART)
	$(PYTHON) plots/plot.py --csv "$$(cat $(BUILD)/results-csv)" --part $(PART) --readme README.md --results docs/results.md --chapters-dir chapters

figures: deps
	$(PYTHON) plots/figures.py

profile: gpu-check build
	scripts/profile.sh $(BUILD) $(CHAPTER) $(PROFILE_ARGS)

sanitize: gpu-check build
	STEPS="$(STEPS)" scripts/sanitize.sh $(BUILD) $(PART)

clean:
	rm -rf build
