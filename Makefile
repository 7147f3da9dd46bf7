# The entry points do all the set-up on a fresh machine (see README):
#   make demo   installs the project into .venv and trains GT on the embedded CSL default
#   make test   installs the project into .venv and runs the test suite (which also builds the
#               API reference with `mkdocs build --strict`: tests/project/test_docs.py)
#   make test-fast  the suite without the tests marked slow (a quick check while editing)
#   make lint   ruff's linter (configured in pyproject.toml; CI runs it before the tests)
#   make docs   builds the API reference and the guides into site/ (warnings are errors)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: install demo test test-fast lint docs
install: $(VENV)/.installed

# torch first, from the pinned CPU build; everything else constrained to it so nothing pulls
# another torch.
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[all,test,docs,lint]"
	touch $@

demo: install
	$(BIN)/graph-transformers train

test: install
	$(BIN)/python -m pytest -q

test-fast: install
	$(BIN)/python -m pytest -q -m "not slow"

lint: install
	$(BIN)/ruff check src tests benchmarks

docs: install
	$(BIN)/mkdocs build --strict --site-dir site
