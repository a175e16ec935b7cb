# The two commands: `make run` starts the workbench, `make test` runs every test.
.PHONY: run test lint

run:
	@scripts/venv.sh requirements/base.txt
	@scripts/node_modules.sh
	@.venv/bin/python bin/serve

test:
	@scripts/venv.sh requirements.txt
	@scripts/node_modules.sh
	@.venv/bin/python -m pytest

# Lint, the type checks (mypy: pyproject.toml for the project, mypy-sandbox.ini for the code
# that runs inside the sandbox) and the import rules between the parts (.importlinter).
lint:
	@scripts/venv.sh requirements.txt
	@.venv/bin/ruff check .
	@.venv/bin/mypy
	@.venv/bin/mypy --config-file mypy-sandbox.ini
	@.venv/bin/lint-imports
