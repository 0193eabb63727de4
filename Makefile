# The two commands a newcomer needs. Both set themselves up.
PORT ?= 8080
ARGS ?=

.PHONY: demo test venv

venv:
	@test -x .venv/bin/python || python3 -m venv .venv
	@.venv/bin/python -c "import monitor" 2>/dev/null || { \
	  .venv/bin/python -m pip install -q --require-hashes -r requirements/runtime.lock && \
	  .venv/bin/python -m pip install -q --no-deps -e . ; }

demo: venv
	.venv/bin/herowatch demo --port $(PORT)

test:
	scripts/test $(ARGS)
