# Quick start: `make demo` (set up + main job) and `make test` (set up + tests). Both idempotent.
PY := .venv/bin/python
DATA ?= $(or $(SYMBOLKG_DATA),../shared/data)
PROGRAMS := $(DATA)/logiclm/programs
WORKERS ?= 2

.PHONY: setup demo lint test test-fast test-llm bench clean

# Write bytecode caches even where the environment says not to (PYTHONDONTWRITEBYTECODE=1 on these
# machines): otherwise every Python process the tests start (solver workers, Ray workers, CLI
# subprocesses) compiles the package from source again, and pytest rewrites every test module anew.
unexport PYTHONDONTWRITEBYTECODE

setup:
	bash cluster/setup_node.sh

# The main job on the embedded default (vLLM's CPU build, SmolLM2-135M-Instruct): Logic-LM's
# method on 50 ProntoQA problems (CI's token budget: see docs/MODELS.md), the LKGs of the first FOLIO
# stories, then every recorded GPT-4 program of Logic-LM's five datasets through the Ray solver
# pool. Second, the same method with qwen2.5-coder-1.5b on the first 50 problems of each Logic-LM set,
# replayed from the completions that model gave (benchmarks/llm_formalizer.py ran it; a fresh copy in
# runs/, since SQLite writes beside the file it opens): what a model that can formalize reaches, without
# installing it. Reruns resume and answer LLM calls from runs/completions at no token cost. What vLLM,
# Triton, torch and the NUMA binding print while the engine starts (and all its engine process prints)
# goes to $(DEMO_LOG), not between the progress bars. It ends with one summary of the runs (counts only:
# the README shows the same text, and tests/test_readme.py rebuilds it from a replayed run of these
# commands, so change them together) and the command that shows every run.
DEMO_LOG := runs/demo-libraries.log
DEMO_SETS := ProntoQA ProofWriter FOLIO LogicalDeduction AR-LSAT
QWEN_COMPLETIONS := benchmarks/out/qwen/completions
demo: setup
	@mkdir -p runs
	@rm -f $(DEMO_LOG)
	SYMBOLKG_LIBRARY_LOG=$(DEMO_LOG) $(PY) -m symbolkg.jobs.cli solve --method logiclm --dataset prontoqa --limit 50 \
	    --max-tokens 384 --max-refine-rounds 1 \
	    --out runs/demo-logiclm-prontoqa.parquet --cache runs/completions --workers $(WORKERS) --data-dir $(DATA)
	@rm -rf runs/qwen-completions && mkdir -p runs/qwen-completions
	@cp $(QWEN_COMPLETIONS)/completions.sqlite runs/qwen-completions/
	$(PY) -m symbolkg.jobs.cli solve --method logiclm --dataset prontoqa,proofwriter,folio,logicaldeduction,ar-lsat \
	    --limit 50 \
	    --engine replay --model qwen2.5-coder-1.5b --cache runs/qwen-completions \
	    --out runs/demo-logiclm-qwen.parquet --workers $(WORKERS) --data-dir $(DATA)
	SYMBOLKG_LIBRARY_LOG=$(DEMO_LOG) $(PY) -m symbolkg.jobs.cli lkg build --dataset folio --limit 8 --max-tokens 2048 \
	    --chunk-chars 200 --max-repair-rounds 1 --store runs/lkg-folio --cache runs/completions --data-dir $(DATA)
	@for ds in $(DEMO_SETS); do \
	  echo "== $$ds (recorded GPT-4 programs)"; \
	  $(PY) -m symbolkg.jobs.cli solve --programs $(PROGRAMS)/$${ds}_dev_gpt-4.json --out runs/demo-$$ds.parquet \
	      --workers $(WORKERS) --data-dir $(DATA) || exit 1; \
	done
	@echo
	@echo "== summary (symbolkg report --summary; every number of a run: symbolkg report RUN)"
	@$(PY) -m symbolkg.jobs.cli report --summary runs/demo-logiclm-prontoqa.parquet runs/demo-logiclm-qwen.parquet \
	    $(foreach ds,$(DEMO_SETS),runs/demo-$(ds).parquet)
	@echo
	@echo "Library messages (vLLM, Triton, torch, NUMA binding): $(DEMO_LOG)"
	@echo "Every run, problem by problem (programs, certificates, filters; then open http://127.0.0.1:7575/):"
	@echo "    $(PY) -m symbolkg.jobs.cli view runs --data-dir $(DATA)"

# Ruff's lint rules and its formatter ([tool.ruff] in pyproject.toml), read-only: CI runs it before the
# tests. To fix what it finds: `$(PY) -m ruff format .` and `$(PY) -m ruff check --fix .`.
lint: setup
	$(PY) -m ruff check . && $(PY) -m ruff format --check .

# pytest-xdist processes for the tests without a model (one per core; a test file stays on one
# process, so its module fixtures, e.g. a Ray runtime, are built once). The real-model tests run
# in one process after them: each uses both cores, and they share one vLLM server.
TEST_PROCS ?= auto

# Everything, the real-LLM tests included: what CI runs (`.ci/run`), slowest tests listed after each part.
test: setup
	$(PY) -m pytest -q -m "not llm" -n $(TEST_PROCS) --dist loadfile --durations=20
	$(PY) -m pytest -q -m llm --durations=15

# The inner loop: no model, no multi-node cluster, no whole-dataset runs (under 5 minutes on 2 cores).
test-fast: setup
	$(PY) -m pytest -q -m "not slow and not cluster" -n $(TEST_PROCS) --dist loadfile --durations=10

# Only the real-model tests (vLLM CPU engine, vllm serve, end-to-end logiclm/cot/symbolkg, LKG build).
test-llm: setup
	$(PY) -m pytest -q -m llm -s

bench: setup
	$(PY) benchmarks/solver_throughput.py

clean:
	rm -rf runs .pytest_cache
