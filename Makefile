# Two commands on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_DEV := $(VENV)/.stamp-dev
STAMP_LOCAL := $(VENV)/.stamp-local
STAMP_TRAIN := $(VENV)/.stamp-train
STAMP_CORE := $(VENV)/.stamp-core
DEMO_OUT ?= runs/demo
# the LLM judge when an endpoint is configured, else the offline rules judge
JUDGE ?= $(if $(RAGTRIAGE_LLM_BASE_URL),llm,rules)

.PHONY: test lint typecheck unit venv clean demo demo-llm serve browser-deps

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev,pandas,ann,pg,ray,langchain,llamaindex,serve]'
	touch $(STAMP_DEV)

venv: $(STAMP_DEV)

# torch/transformers/peft for the LoRA generator test (tests/test_know_lora.py); torch==2.13.0
# is pinned in the extra: pip takes the CPU build this machine kind keeps on disk
$(STAMP_TRAIN): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[train]'
	touch $(STAMP_TRAIN)

# Portable CPU flags: a native build may emit AMX instructions that a VM's CPU advertises
# but traps on ("Illegal instruction"); --no-cache-dir keeps pip from reusing such a wheel.
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

# embedded default models: the generator compiles llama.cpp once (~7 min on 2 cores)
$(STAMP_LOCAL): pyproject.toml | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install -q --no-cache-dir -e '.[local,serve]'
	touch $(STAMP_LOCAL)

# the demo needs only the core install (the offline extractive generator) plus the serve
# extra, so that `make serve` (or `.venv/bin/ragtriage serve runs/demo`) browses the demo
# run right after; GENERATOR=llama_cpp (or `make demo-llm`) uses the embedded Gemma model
GENERATOR ?= extractive_multi
DEMO_WEAK ?= $(if $(filter llama_cpp,$(GENERATOR)),configs/demo-weak-llm.yaml,configs/demo-weak.yaml)
DEMO_GATE ?= accuracy>=+0.02
DEMO_STAMP := $(if $(filter llama_cpp,$(GENERATOR)),$(STAMP_LOCAL),$(STAMP_CORE))

$(STAMP_CORE): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[serve]'
	touch $(STAMP_CORE)

# the loop: weak pipeline -> diagnose -> top advice as a config change -> re-run -> compare
# (its seven ragtriage commands are in scripts/readme_demo.py, which also writes the
# README's demo figures from them and lets tests/test_readme_demo.py rerun the loop)
demo: $(DEMO_STAMP)
	$(BIN)/python scripts/readme_demo.py run --out $(DEMO_OUT) --weak $(DEMO_WEAK) \
		--judge $(JUDGE) --gate '$(DEMO_GATE)'
	@echo "browse both runs: make serve (http://127.0.0.1:8765/)"

demo-llm:
	$(MAKE) demo GENERATOR=llama_cpp

# the local web app over the runs (SERVE_RUNS, default ./runs: the demo's before/after);
# installs the core package with the serve extra into .venv first (once)
SERVE_RUNS ?= runs
serve: $(STAMP_CORE)
	$(BIN)/ragtriage serve $(SERVE_RUNS)

lint: $(STAMP_DEV)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP_DEV)
	$(BIN)/mypy --strict src/ragtriage

# Debian chromium (and CJK fonts, else Chinese text renders as empty boxes) for the
# headless-browser tests of the HTML report and `ragtriage serve` (~20 s, root + apt only;
# without chromium those tests skip and say why)
browser-deps:
	@missing=""; [ -x /usr/bin/chromium ] || missing=" chromium"; \
	dpkg -s fonts-noto-cjk >/dev/null 2>&1 || missing="$$missing fonts-noto-cjk"; \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null) \
		|| echo "warning: could not install$$missing; the browser tests may skip"; \
	else echo "note: missing$$missing and no root apt-get; the browser tests may skip"; fi

unit: $(STAMP_DEV) $(STAMP_TRAIN) browser-deps
	$(BIN)/python -m pytest -q

test: lint typecheck unit

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
