# The two commands a newcomer needs. Both set themselves up, on a fresh clone and every time after.
PORT ?= 8080
ARGS ?=
PYTHON ?= python3

.PHONY: demo test venv

# "Installed?" is a stamp holding the hash of pyproject.toml, written only after pip succeeded: never
# `python -c "import monitor"`, which the repository's own ./monitor folder answers from the root.
# scripts/test writes .venv/.herowatch-installed (with the dev tools); either stamp will do here.
venv:
	@test -x .venv/bin/python || $(PYTHON) -m venv .venv
	@want=$$(.venv/bin/python -c "import hashlib; print(hashlib.sha256(open('pyproject.toml', 'rb').read()).hexdigest())"); \
	dev=$$(cat pyproject.toml requirements/dev.lock | sha256sum | cut -d' ' -f1); \
	if [ -x .venv/bin/herowatch ] && { [ "$$(cat .venv/.herowatch-run 2>/dev/null)" = "$$want" ] || \
	   [ "$$(cat .venv/.herowatch-installed 2>/dev/null)" = "$$dev" ]; }; then exit 0; fi; \
	echo "==> installing herowatch into .venv (once; about a minute)"; \
	log=$$( { .venv/bin/python -m pip install -q --disable-pip-version-check \
	  --require-hashes -r requirements/runtime.lock && \
	  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -e . ; } 2>&1 ) \
	  || { echo "$$log" >&2; exit 1; }; \
	echo "$$log" | grep -v -e '^WARNING: Location' -e 'BuildBackendWarning' -e '^ *!!$$' -e '^ *\*\*\*' \
	  -e 'Please be careful with folders' -e 'name as your package as they may' -e 'with strategy, WheelFile' \
	  -e '^ *$$' || true; \
	echo "$$want" > .venv/.herowatch-run

demo: venv
	.venv/bin/herowatch demo --port $(PORT)

test:
	scripts/test $(ARGS)
