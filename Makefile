# Two entry points do all the set-up on a fresh machine (see README):
#   make demo   installs the project into .venv and trains GT on the embedded CSL default
#   make test   installs the project into .venv and runs the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: install demo test
install: $(VENV)/.installed

# torch first, from the pinned CPU build; everything else constrained to it so nothing pulls
# another torch.
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[all,test]"
	touch $@

demo: install
	$(BIN)/graph-transformers train

test: install
	$(BIN)/python -m pytest -q
