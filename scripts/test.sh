#!/usr/bin/env bash
# Set up (first time) and run the whole test suite: lint (ruff, the import layers) and type
# checks, the documentation site's strict build, then pytest against a real PostgreSQL with
# pgvector (embedded, or TEST_DATABASE_URL), real Celery workers and the real `mnemosyne up`.
# Extra arguments go to pytest (e.g. -k health, -x).
# `--quick` (first argument): the same checks and every test but the slow ones (real processes:
# Celery workers, `mnemosyne up`) and the browser ones, spread over the machine's cores
# (pytest-xdist: one worker per core, each with its own test database on the same server; an idle
# worker takes tests from the other's share); for the loop while changing code. The whole run,
# as CI does it, one test at a time, before a commit lands.
quick=0
if [ "${1:-}" = "--quick" ]; then
    quick=1
    shift
fi
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
ensure_venv "[test,hermes]"
cd "$ROOT"
say "ruff: lint and format check"
"$VENV/bin/ruff" check --quiet .
"$VENV/bin/ruff" format --check --quiet .
say "lint-imports: the layers in pyproject.toml"
"$VENV/bin/lint-imports" --no-cache --no-logo
say "mypy: types of tenants, facts, retrieval and hermes_provider"
# The Django plugin imports the settings: give them the tests' data directory and a key, and
# no database of the caller's (types do not depend on them).
env -u DATABASE_URL -u DATABASE_OWNER_URL -u DATABASE_REPLICA_URL \
    MNEMOSYNE_HOME="$ROOT/.mnemosyne-test" \
    SECRET_KEY="type-check-only-secret-key-0123456789abcdefghijklmnop" \
    "$VENV/bin/mypy" --config-file "$ROOT/pyproject.toml"
say "mkdocs: the documentation site (a broken link, anchor or missing page fails)"
# Built into the tests' folder, offline; Material's notice about MkDocs 2.0 is left out.
NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict --quiet \
    --config-file "$ROOT/mkdocs.yml" --site-dir "$ROOT/.mnemosyne-test/site"
say "pytest"
set +e
# Temporary folders of this checkout's own: pytest prunes old runs' folders under /tmp, which
# would pull the ground from under another checkout's run (and its embedded databases).
if [ "$quick" = 1 ]; then
    set -- -m "not slow and not browser" -n auto --dist worksteal "$@"
fi
"$VENV/bin/python" -m pytest --basetemp="$ROOT/.mnemosyne-test/tmp" "$@"
code=$?
set -e
if [ "$code" = 5 ]; then
    # Nothing collected: fine for a selection (-k, -m) that matched nothing, not for the suite.
    total="$("$VENV/bin/python" -m pytest --collect-only -q 2>/dev/null | grep -cE '::' || true)"
    if [ "$total" = 0 ]; then
        echo "The test suite is empty." >&2
        exit 5
    fi
    echo "No test matched the selection; the suite has $total tests."
    exit 0
fi
exit "$code"
