# Quick start: `make demo` (set up + main job) and `make test` (set up + tests). Both idempotent.
PY := .venv/bin/python
DATA ?= $(or $(SYMBOLKG_DATA),../shared/data)
PROGRAMS := $(DATA)/logiclm/programs
WORKERS ?= 2

.PHONY: setup demo test test-fast test-llm bench clean

setup:
	bash cluster/setup_node.sh

# The main job on the embedded default: every recorded GPT-4 program of Logic-LM's five
# datasets through the Ray solver pool, one results Parquet each, then the reports.
demo: setup
	@mkdir -p runs
	@for ds in ProntoQA ProofWriter FOLIO LogicalDeduction AR-LSAT; do \
	  echo "== $$ds"; \
	  $(PY) -m jobs.cli solve --programs $(PROGRAMS)/$${ds}_dev_gpt-4.json --out runs/demo-$$ds.parquet \
	      --workers $(WORKERS) --data-dir $(DATA) || exit 1; \
	done

test: setup
	$(PY) -m pytest -q -m "not llm"

test-fast: setup
	$(PY) -m pytest -q -m "not slow"

# Real-model tests (vLLM CPU engine, vllm serve, end-to-end logiclm/cot on ProntoQA): ~20+ min on 2 cores.
test-llm: setup
	$(PY) -m pytest -q -m llm -s

bench: setup
	$(PY) benchmarks/solver_throughput.py

clean:
	rm -rf runs benchmarks/out .pytest_cache
