# Every target creates the virtual environment and installs into it when missing,
# so each works on a fresh machine with only Python 3.11.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO := demo_out

.PHONY: demo test test-fast test-tiers bench bench-quick lint docs clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,plot,docs,dlib,distributed,crypto]'
	@touch $(STAMP)

# Every test (CI). With -n, tests/conftest.py picks --dist loadfile: a file's tests share
# one worker, so a module fixture is built once, not once per worker.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --durations=15 tests

# The unit tier for the edit loop: no real data, hardening corpus, benchmark smoke, nor
# tests that start or use a process or cost more than 1 CPU-s with their fixtures, as
# tests/tiers.json records them (tests/tiers.py; docs/contributing.md).
TIER_FAST := not (slow or hardening or bench or process or heavy)
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q -m "$(TIER_FAST)" tests

# Measure every test that no static rule places (real data, hardening, benchmark smoke:
# not run) and rewrite tests/tiers.json; commit the file. For a few files:
# pytest -n 2 --write-tiers tests/test_x.py
test-tiers: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q --write-tiers tests

demo: $(STAMP)
	@rm -rf $(DEMO) && mkdir -p $(DEMO)
	cd $(DEMO) && ../$(BIN)/ssgallery enroll ../sample_data/faces
	cd $(DEMO) && ../$(BIN)/ssgallery compress --m 2
	cd $(DEMO) && ../$(BIN)/ssgallery verify ../sample_data/probes/*.png --claim c03 ; test $$? -le 1
	cd $(DEMO) && ../$(BIN)/ssgallery info
	cd $(DEMO) && ../$(BIN)/ssgallery show --claim c03 -o prototypes_c03.png
	cd $(DEMO) && ../$(BIN)/ssgallery roc ../sample_data/faces --repetitions 2 -o report
	@echo
	@echo "Demo done. Outputs are in $(CURDIR)/$(DEMO): enrollment.h5, gallery.h5,"
	@echo "prototypes_c03.png and the evaluation report in $(CURDIR)/$(DEMO)/report/"
	@echo "compress's expected FRR is the price of its default thresholds (FAR 1 % on strangers);"
	@echo "what it is on AT&T, and roc's svm row: docs/getting-started.md#how-hard-the-sample-faces-are"

# Benchmarks print ratios measured side by side in one run; figures go to benchmarks/out/.
# The whole set takes about 45 minutes on 2 cores; bench-quick about 5.
bench: $(STAMP)
	$(BIN)/python benchmarks/verify_latency.py
	$(BIN)/python benchmarks/toy_fig2.py
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/paper_att.py --jobs 2
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/teacher_att.py --repetitions 3
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/solvers.py
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/ebgm_throughput.py
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/paper_att_ebgm.py --max-iter 4
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/paper_table1.py
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/regression_distill.py

bench-quick: $(STAMP)
	$(BIN)/python benchmarks/verify_latency.py --runs 7 --probes 300
	$(BIN)/python benchmarks/toy_fig2.py --seeds 3
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/solvers.py --quick

lint: $(STAMP)
	$(BIN)/ruff check ssgallery ssgallery_ebgm ssgallery_dlibbox tests benchmarks tools
	$(BIN)/lint-imports

# The documentation site (mkdocs-material) into site/; --strict turns every warning
# (a broken link, a page missing from the nav, a docstring griffe cannot parse) into an error.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache site
