# Shared by up.sh and test.sh: make .venv with Mnemosyne installed (with the given extras).
# Re-installs only when pyproject.toml changed since the last install.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${MNEMOSYNE_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"

say() { printf '==> %s\n' "$*"; }

ensure_venv() {
    local extras="$1"
    if ! "$PYTHON" -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 14)))' 2>/dev/null; then
        echo "Mnemosyne needs Python 3.11 to 3.13 as '$PYTHON' (set PYTHON=/path/to/python3.11)." >&2
        exit 1
    fi
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating a virtual environment in $VENV"
        if ! "$PYTHON" -m venv "$VENV" 2>/dev/null; then
            rm -rf "$VENV"
            if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
                say "installing python3-venv (Debian/Ubuntu)"
                apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
                "$PYTHON" -m venv "$VENV"
            else
                echo "Python cannot create a virtual environment: run 'sudo apt-get install python3-venv' and retry." >&2
                exit 1
            fi
        fi
    fi
    local stamp="$VENV/.mnemosyne-installed"
    local want
    want="$(sha256sum < "$ROOT/pyproject.toml" | cut -d" " -f1) $extras"
    local have=""
    [ -f "$stamp" ] && have="$(cat "$stamp")"
    # The test extras (with Hermes, for its integration tests) include everything `up` needs.
    if [ "$have" != "$want" ] && [ "$have" != "${want% *} [test,hermes]" ]; then
        say "installing Mnemosyne and its dependencies into $VENV (first time: about a minute)"
        local log="$VENV/pip-install.log"
        if ! { "$VENV/bin/python" -m pip install --upgrade pip \
               && "$VENV/bin/python" -m pip install --editable "$ROOT$extras"; } >"$log" 2>&1; then
            tail -n 40 "$log" >&2
            echo "Installing the dependencies failed; the whole log is in $log" >&2
            exit 1
        fi
        "$VENV/bin/python" -c 'import memoryadmin.env' # fails loudly if the install did not work
        echo "$want" > "$stamp"
    fi
}
