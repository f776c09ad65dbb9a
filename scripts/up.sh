#!/usr/bin/env bash
# Set up (first time) and run Mnemosyne: database, web server, worker and beat. Ctrl-C stops all.
# Extra arguments go to `mnemosyne up` (e.g. --bind 0.0.0.0:8000).
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
ensure_venv ""
cd "$ROOT"
exec "$VENV/bin/mnemosyne" up "$@"
