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

lint:
	@scripts/venv.sh requirements.txt
	@.venv/bin/ruff check .
