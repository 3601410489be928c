# dpmlens — two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow test-python test-node lint fuzz bench bench-profile bench-traces bench-multitest bench-lsp bench-large bench-fleet e2e package clean captures lab-ab lab-ordering

$(STAMP): server/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e 'server[dev,server,traces]'
	touch $(STAMP)

# The traces' C modules (the ftrace reader's scan, traces/read/_ftrace_tokens.c, the
# critical-path walk, traces/analysis/_critical_walk.c, the timeline's runs,
# traces/model/_timeline_runs.c, and the report's JSON text, traces/report/_json_text.c),
# built in place; optional: without a C compiler it says so and the traces use their Python
# code (the reference).
SCAN := $(VENV)/.ftrace_tokens
$(SCAN): $(STAMP) server/dpmlens/traces/read/_ftrace_tokens.c server/dpmlens/traces/analysis/_critical_walk.c server/dpmlens/traces/model/_timeline_runs.c server/dpmlens/traces/report/_json_text.c server/tools/build_ftrace_tokens.py
	$(PY) server/tools/build_ftrace_tokens.py
	touch $(SCAN)

# pyspark for the fleet's Spark test (tests/test_fleet_spark.py): a ~456 MB source archive,
# kept out of the editable install; pip's cache (~/.cache/pip) keeps the download and the
# wheel it builds, so only the first run pays for it. Needs Java 17/21 at test time.
SPARK := $(VENV)/.spark
$(SPARK): $(STAMP)
	$(PY) -m pip install -q pyspark==4.3.0
	touch $(SPARK)

node_modules/.installed: package.json
	npm install --no-audit --no-fund
	touch node_modules/.installed

demo: $(STAMP) $(SCAN)
	$(VENV)/bin/dpmlens check test-fixtures/demo; test $$? -le 1

# Benchmark over a kernel tree's drivers/ (README: "Benchmark"); BENCH_KERNEL points at it.
BENCH_KERNEL ?= /work/linux/linux-source-6.12
BENCH_JOBS   ?= 2
bench: $(STAMP)
	$(PY) bench/bench_check.py --kernel $(BENCH_KERNEL) --jobs $(BENCH_JOBS)

# Where `dpmlens check` spends its CPU, stage by stage (one process).
bench-profile: $(STAMP)
	$(PY) bench/profile_check.py --kernel $(BENCH_KERNEL)

# Trace importers: generates ~250 MB + ~1.1 GB ftrace and a Perfetto trace under bench-data/.
bench-traces: $(STAMP) $(SCAN)
	$(PY) bench/bench_traces.py

# pm-graph's published 100-run multitest (167 MB of real ftrace; a shallow clone of
# github.com/intel/pm-graph's gh-pages branch on first use): `trace report --format json`.
bench-multitest: $(STAMP) $(SCAN)
	$(PY) bench/bench_multitest.py

# Language server over stdio on drivers/usb/core/hub.c, workspace = drivers/ (BENCHMARKS.md).
# Then the same edits in one process, full analysis vs incremental.py, to isolate the analysis.
bench-lsp: $(STAMP)
	$(PY) bench/bench_lsp.py --kernel $(BENCH_KERNEL)
	$(PY) bench/bench_incremental.py --kernel $(BENCH_KERNEL)
	$(PY) bench/bench_open.py --kernel $(BENCH_KERNEL)

# The 20 MB document (issue 29): the first 637 drivers/ files with a dev_pm_ops, as 637 files
# and as one (built under bench-data/large/), CLI and editor; says so and exits 0 without
# the tree.
bench-large: $(STAMP)
	$(PY) bench/bench_large.py --kernel $(BENCH_KERNEL)

# Fleet store budgets (issue 22): ingest rate and memory, bytes per cycle, `fleet report` over
# 10^8 callback rows (a synthetic store of ~10 GB of rows made under bench-data/fleet/).
bench-fleet: $(STAMP)
	nice $(PY) bench/bench_fleet.py
	nice $(PY) bench/bench_fleet_editor.py

# ruff over server/, and mypy (configured in server/pyproject.toml: strict for dpmlens/lsp/)
lint: $(STAMP)
	$(VENV)/bin/ruff check server
	cd server && ../$(VENV)/bin/mypy

test-python: $(STAMP) $(SCAN) $(SPARK) lint
	cd server && ../$(PY) -m pytest -q; rc=$$?; if [ $$rc -eq 5 ]; then echo "no python tests"; exit 0; fi; exit $$rc

test-node: node_modules/.installed
	npm run --silent build
	npm test

test: test-python test-node

# The marked suite: what `make test` skips for time (the lab summaries re-made from the
# checked-in captures, ~10 min; a 100-cycle x 2,000-device timeline in chromium; the C and
# Python ftrace scans compared on all 413 MB of the lab's captures, 3-7 min).
test-slow: $(STAMP) $(SCAN)
	cd server && DPMLENS_SLOW_TESTS=1 ../$(PY) -m pytest -q tests/test_lab_whatif.py tests/test_lab_whatif_sched.py tests/test_traces_html.py tests/test_ftrace_tokens.py

# Property-based fuzzing (issue 11): the C model, every trace importer and the language server
# over stdio, with fresh seeds round after round for FUZZ_MINUTES (a short run of the same
# properties is part of `make test`). A failure's minimal input lands in test-fixtures/fuzz/found/.
FUZZ_MINUTES  ?= 5
FUZZ_EXAMPLES ?= 300
fuzz: $(STAMP)
	cd server && nice ../$(PY) tests/fuzz_driver.py --minutes $(FUZZ_MINUTES) --examples $(FUZZ_EXAMPLES)

# The capture lab (lab/README.md, docs/traces.md "Capture lab"): Debian's 6.1 and 6.12 kernels
# (apt-get download, cached in lab/cache/) booted under qemu (TCG), suspend/resume cycles
# captured into build/lab/, the checked-in fixtures test-fixtures/lab/*.gz re-made from them.
# Idempotent: a capture already in build/lab/ is kept (FORCE=1 redoes all). Never run by CI
# (booting qemu without KVM takes minutes); the tests only read the checked-in files.
captures:
	lab/make-captures.sh

# The A/B experiments (pm_async, USB fast enumeration) and the what-if checked against them:
# 32 S3 cycles per configuration per kernel in 4 boots of 8, with the scheduler's events
# (--sched: what the contention model reads), ~20 min a kernel on this machine (as root,
# LAB_NICE=-5 keeps the TCG guests from being starved); tables in build/lab/ab-*.md.
LAB_CYCLES ?= 32
LAB_PARTS ?= 4
LAB_NICE ?= 5
lab-ab: $(STAMP)
	$(PYTHON) lab/ab_experiment.py --kernel 6.1 --cycles $(LAB_CYCLES) --parts $(LAB_PARTS) --nice $(LAB_NICE) --sched --out build/lab/ab-6.1
	$(PYTHON) lab/ab_experiment.py --kernel 6.12 --cycles $(LAB_CYCLES) --parts $(LAB_PARTS) --nice $(LAB_NICE) --sched --out build/lab/ab-6.12

# --ordering 6.16 against a kernel that has it: 7.2 (trixie-backports) booted like the A/B
# runs (2 boots of 8 S3 cycles), the 6.12 defaults replayed with the 6.16 order (~5 min).
lab-ordering: $(STAMP)
	for p in 1 2; do [ -f build/lab/ordering/7.2/A/part$$p/ftrace.txt ] || \
	  $(PYTHON) lab/run_lab.py --quiet --kernel 7.2 --mode mem --cycles 8 --retries 5 \
	    --out build/lab/ordering/7.2/A/part$$p || exit 1; done
	$(PYTHON) lab/ordering_experiment.py --old test-fixtures/lab/ab/6.12/A1 \
	  test-fixtures/lab/ab/6.12/A2 --new build/lab/ordering/7.2/A --without hdaudioC0D0 \
	  --out build/lab/ordering/ordering-6.12-7.2

# VS Code extension: dpmlens-<version>.vsix = esbuild bundle + the server wheel (rules/ and
# grammars/ inside as dpmlens/data/), built by `npm run package` (prepackage bundles the server).
package: node_modules/.installed $(STAMP)
	npm run --silent package

# The extension in a real VS Code: code-server + playwright-core + Debian chromium (e2e/).
# e2e/install.sh installs whatever is missing (apt, npm ci) and is quick when nothing is;
# results and screenshots: e2e/artifacts/.
e2e: package
	e2e/install.sh
	node e2e/run.mjs

clean:
	rm -rf $(VENV) node_modules out dist bundled *.vsix e2e/node_modules e2e/artifacts server/.mypy_cache server/build server/dpmlens/traces/read/_ftrace_tokens*.so
