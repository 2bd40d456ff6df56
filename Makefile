# The course's two commands:
#   make demo   set up, build the student notebooks, grade the bundled lesson-5 submissions, print the gradebook
#   make test   set up (incl. bubblewrap for the sandbox, headless Chromium for the browser tests) and run the
#               whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: setup demo test browser sandbox clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	# the course's JupyterLab extension (plain JS): an editable install does not copy data files, so link it
	mkdir -p $(VENV)/share/jupyter/labextensions
	ln -sfn $(CURDIR)/autograder/labextension $(VENV)/share/jupyter/labextensions/cuda-course-lab
	touch $@

setup: $(VENV)/.installed

demo: setup sandbox
	$(BIN)/autograder demo

browser:
	bash scripts/install_browser.sh

sandbox:
	bash scripts/install_sandbox.sh

# two workers (the CI machine has two cores); a module's slow tests stay together (tests/conftest.py)
TEST_WORKERS ?= 2
test: setup browser sandbox
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

clean:
	rm -rf $(VENV) .pytest_cache out
