#!/usr/bin/env bash
# Make the `vector` extension (pgvector) available to the machine's
# PostgreSQL 15 server.
#
# Idempotent: if vector.control and vector.so are already installed for
# PostgreSQL 15 it prints the installed version and exits 0 at once.
#
# Otherwise it builds Debian trixie's own `pgvector` source package against
# postgresql-server-dev-15 (bookworm ships no pgvector).  The trixie source is
# fetched through a PRIVATE apt configuration (own sources.list, lists dir and
# cache dir in a temp dir), so the system's apt sources and lists are never
# touched.  Noisy output goes to a log file that is shown only on failure.
#
# Non-interactive; meant to run as root (CI runs as root).
# Env overrides:
#   PGVECTOR_LOG   log file of the noisy output, printed (tail) on failure
#                  (default /tmp/install-pgvector.log)
#   PGVECTOR_FORCE=1 rebuild and reinstall even if already installed
#   PG_HOST/PG_PORT  server to verify against (default 127.0.0.1:5432)
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

PG_MAJOR=15
PG_BIN="/usr/lib/postgresql/${PG_MAJOR}/bin"
PG_CONFIG="${PG_BIN}/pg_config"
PG_HOST="${PG_HOST:-127.0.0.1}"
PG_PORT="${PG_PORT:-5432}"
SUITE=trixie
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
SYSTEM_SOURCES=/etc/apt/sources.list.d/debian.sources
LOG="${PGVECTOR_LOG:-/tmp/install-pgvector.log}"

say() { printf '==> %s\n' "$*"; }

# --------------------------------------------------------------------------
# Fast path: already installed?
# --------------------------------------------------------------------------
if [ -x "$PG_CONFIG" ]; then
    SHAREDIR="$("$PG_CONFIG" --sharedir)"
    PKGLIBDIR="$("$PG_CONFIG" --pkglibdir)"
else
    SHAREDIR="/usr/share/postgresql/${PG_MAJOR}"
    PKGLIBDIR="/usr/lib/postgresql/${PG_MAJOR}/lib"
fi
CONTROL="${SHAREDIR}/extension/vector.control"

control_version() {
    sed -n "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'\{0,1\}\([^'[:space:]]*\)'\{0,1\}.*/\1/p" "$CONTROL" | head -n1
}

if [ "${PGVECTOR_FORCE:-0}" != 1 ] && [ -f "$CONTROL" ] && [ -f "${PKGLIBDIR}/vector.so" ]; then
    echo "pgvector already installed (version $(control_version))"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install-pgvector: must run as root to install packages" >&2
    exit 1
fi

START_TS=$(date +%s)
WORK="$(mktemp -d /tmp/install-pgvector.XXXXXX)"
: >"$LOG"

on_exit() {
    local rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "install-pgvector: FAILED (exit $rc); last lines of the log:" >&2
        echo "----------------------------------------------------------------" >&2
        tail -n 80 "$LOG" >&2 || true
        echo "----------------------------------------------------------------" >&2
        echo "full log: $LOG" >&2
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap on_exit EXIT

# run CMD...: run a command with all its output going to the log
run() {
    printf '+ %s\n' "$*" >>"$LOG"
    "$@" >>"$LOG" 2>&1
}

# --------------------------------------------------------------------------
# 1. postgresql-server-dev-15 (+ dpkg-dev for dpkg-source, build tools)
# --------------------------------------------------------------------------
SERVER_VER="$(dpkg-query -W -f='${Version}' "postgresql-${PG_MAJOR}" 2>/dev/null || true)"

mirror_has() { # mirror_has PKG VERSION
    local versions
    versions="$(apt-cache madison "$1" 2>/dev/null | awk -F'|' '{gsub(/ /,"",$2); print $2}')" || return 1
    grep -qxF "$2" <<<"$versions"
}
is_installed() { # is_installed PKG
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

apt_updated=0
apt_update_once() {
    if [ "$apt_updated" -eq 0 ]; then
        say "apt-get update"
        run apt-get update
        apt_updated=1
    fi
}

DEV_PKG="postgresql-server-dev-${PG_MAJOR}"
if [ -n "$SERVER_VER" ]; then
    if ! mirror_has "$DEV_PKG" "$SERVER_VER"; then
        apt_update_once
    fi
    if mirror_has "$DEV_PKG" "$SERVER_VER"; then
        DEV_SPEC="${DEV_PKG}=${SERVER_VER}"
    else
        echo "    note: ${DEV_PKG} ${SERVER_VER} not on the mirror; installing the candidate (may upgrade PostgreSQL ${PG_MAJOR})"
        DEV_SPEC="$DEV_PKG"
    fi
else
    apt_update_once
    DEV_SPEC="$DEV_PKG"
fi

NEED_PKGS=()
is_installed "$DEV_PKG" || NEED_PKGS+=("$DEV_SPEC")
for p in dpkg-dev make gcc; do
    is_installed "$p" || NEED_PKGS+=("$p")
done
if [ "${#NEED_PKGS[@]}" -gt 0 ]; then
    say "installing ${NEED_PKGS[*]}"
    if ! run apt-get install -y --no-install-recommends "${NEED_PKGS[@]}"; then
        apt_update_once
        run apt-get install -y --no-install-recommends "${NEED_PKGS[@]}"
    fi
fi
echo "    pg_config: $("$PG_CONFIG" --version), server package ${SERVER_VER:-none} -> $(dpkg-query -W -f='${Version}' "postgresql-${PG_MAJOR}" 2>/dev/null || echo none)"

# --------------------------------------------------------------------------
# 2. Make sure the cluster is (still) online
# --------------------------------------------------------------------------
ensure_cluster_online() {
    if command -v pg_lsclusters >/dev/null 2>&1 && [ -d "/etc/postgresql/${PG_MAJOR}/main" ]; then
        local status
        status="$(pg_lsclusters -h "$PG_MAJOR" main 2>/dev/null || true)"
        if ! grep -q online <<<"$status"; then
            say "starting PostgreSQL ${PG_MAJOR}/main cluster"
            run pg_ctlcluster --skip-systemctl-redirect "$PG_MAJOR" main start || true
        fi
    fi
    local _
    for _ in $(seq 1 60); do
        if "${PG_BIN}/pg_isready" -q -h "$PG_HOST" -p "$PG_PORT"; then
            return 0
        fi
        sleep 1
    done
    echo "install-pgvector: PostgreSQL not ready on ${PG_HOST}:${PG_PORT} after 60s" >&2
    pg_lsclusters >>"$LOG" 2>&1 || true
    tail -n 30 "/var/log/postgresql/postgresql-${PG_MAJOR}-main.log" >>"$LOG" 2>&1 || true
    return 1
}
ensure_cluster_online

# --------------------------------------------------------------------------
# 3. Fetch Debian trixie's pgvector source via a private apt configuration
# --------------------------------------------------------------------------
MIRROR=""
if [ -f "$SYSTEM_SOURCES" ]; then
    # first URIs: line of a stanza that is not the security archive
    MIRROR="$(awk 'tolower($1)=="uris:" { for (i=2;i<=NF;i++) if ($i !~ /security/) { print $i; exit } }' "$SYSTEM_SOURCES")"
fi
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
MIRROR="${MIRROR%/}"

APT_DIR="${WORK}/apt"
mkdir -p "${APT_DIR}/lists/partial" "${APT_DIR}/cache/archives/partial" "${WORK}/src"
echo "deb-src [signed-by=${KEYRING}] ${MIRROR} ${SUITE} main" >"${APT_DIR}/sources.list"
# let apt's unprivileged download sandbox user write to the private dirs
if id _apt >/dev/null 2>&1; then
    chmod 755 "$WORK"
    chown -R _apt "${APT_DIR}/lists" "${APT_DIR}/cache" "${WORK}/src"
fi
PRIVATE_APT=(
    -o "Dir::Etc::SourceList=${APT_DIR}/sources.list"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=${APT_DIR}/lists"
    -o "Dir::Cache=${APT_DIR}/cache"
)

say "fetching pgvector source from ${SUITE} (${MIRROR}, private apt config)"
run apt-get "${PRIVATE_APT[@]}" update
SRC_VER="$(apt-cache "${PRIVATE_APT[@]}" showsrc pgvector 2>/dev/null | awk '/^Version:/ {print $2; exit}')"
if [ -z "$SRC_VER" ]; then
    echo "install-pgvector: no pgvector source package found in ${SUITE}" >>"$LOG"
    exit 1
fi
UPSTREAM_VER="${SRC_VER#*:}"
UPSTREAM_VER="${UPSTREAM_VER%-*}"
(cd "${WORK}/src" && run apt-get "${PRIVATE_APT[@]}" source pgvector)
SRC_DIR="$(find "${WORK}/src" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n1)"
if [ -z "$SRC_DIR" ] || [ ! -f "${SRC_DIR}/Makefile" ]; then
    echo "install-pgvector: unpacked pgvector source not found under ${WORK}/src" >>"$LOG"
    exit 1
fi

# --------------------------------------------------------------------------
# 4. Build and install (portable: no -march=native)
# --------------------------------------------------------------------------
say "building pgvector ${UPSTREAM_VER} from Debian ${SUITE} source (${SRC_VER})"
# OPTFLAGS= overrides the upstream default -march=native (Debian's packaging
# drops it too), so the .so runs on any x86-64/arm64 CPU.
run make -C "$SRC_DIR" PG_CONFIG="$PG_CONFIG" OPTFLAGS= -j"$(nproc)"
say "installing pgvector ${UPSTREAM_VER} into PostgreSQL ${PG_MAJOR}"
run make -C "$SRC_DIR" PG_CONFIG="$PG_CONFIG" OPTFLAGS= install

SHAREDIR="$("$PG_CONFIG" --sharedir)"
PKGLIBDIR="$("$PG_CONFIG" --pkglibdir)"
CONTROL="${SHAREDIR}/extension/vector.control"
if [ ! -f "$CONTROL" ] || [ ! -f "${PKGLIBDIR}/vector.so" ]; then
    echo "install-pgvector: make install did not produce $CONTROL and ${PKGLIBDIR}/vector.so" >>"$LOG"
    exit 1
fi

# --------------------------------------------------------------------------
# 5. Verify in a scratch database
# --------------------------------------------------------------------------
ensure_cluster_online
say "verifying CREATE EXTENSION vector in scratch database pgvector_check"
PSQL=("${PG_BIN}/psql" -h "$PG_HOST" -p "$PG_PORT" -U postgres -X -v ON_ERROR_STOP=1)
run "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS pgvector_check" -c "CREATE DATABASE pgvector_check"
VERIFY_OUT="${WORK}/verify.out"
verify_rc=0
"${PSQL[@]}" -d pgvector_check -qAt >"$VERIFY_OUT" 2>>"$LOG" <<'SQL' || verify_rc=$?
CREATE EXTENSION IF NOT EXISTS vector;
SELECT 'extversion=' || extversion FROM pg_extension WHERE extname = 'vector';
SELECT 'cosine_distance=' || ('[1,2,3]'::vector <=> '[1,2,4]'::vector);
SET hnsw.iterative_scan = relaxed_order;
SELECT 'hnsw.iterative_scan=' || current_setting('hnsw.iterative_scan');
SQL
cat "$VERIFY_OUT" >>"$LOG"
run "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS pgvector_check" || true
if [ "$verify_rc" -ne 0 ]; then
    exit "$verify_rc"
fi
sed 's/^/    /' "$VERIFY_OUT"

say "pgvector $(control_version) installed for PostgreSQL ${PG_MAJOR} in $(( $(date +%s) - START_TS ))s"
