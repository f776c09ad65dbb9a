#!/usr/bin/env bash
# A streaming replica of the machine's PostgreSQL 15 (127.0.0.1:5432) on 127.0.0.1:5433, for the
# read-replica tests: replication allowed on the primary (wal_level is `replica` by default; the
# replication entries of pg_hba.conf are added), a base backup taken with pg_basebackup, started
# as a hot standby. Idempotent: a replica already answering on the port is left as it is.
# Usage: .ci/replica.sh [PORT]   (run as root, or as the postgres user)
set -euo pipefail
PORT="${1:-5433}"
VERSION="$(ls /etc/postgresql | head -n1)"
BIN="/usr/lib/postgresql/$VERSION/bin"
DATA="/var/lib/postgresql/mnemosyne-replica-$VERSION-$PORT"
HBA="/etc/postgresql/$VERSION/main/pg_hba.conf"
as_postgres() { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi; }

if pg_isready -q -h 127.0.0.1 -p "$PORT"; then
    echo "replica: already running on port $PORT"
    exit 0
fi
if ! grep -Eq '^(local|host)[[:space:]]+replication' "$HBA"; then
    printf '%s\n' "local replication all trust" "host replication all 127.0.0.1/32 trust" >> "$HBA"
    psql -q -h 127.0.0.1 -p 5432 -U postgres -c "SELECT pg_reload_conf()" >/dev/null
fi
as_postgres "$BIN/pg_ctl" -D "$DATA" stop -m immediate >/dev/null 2>&1 || true
rm -rf "$DATA"
# -R writes standby.signal and primary_conninfo; -X stream copies the WAL made meanwhile.
as_postgres "$BIN/pg_basebackup" -h 127.0.0.1 -p 5432 -U postgres -D "$DATA" -R -X stream -c fast
# Debian keeps the configuration outside the data directory: the replica gets its own.
as_postgres tee "$DATA/postgresql.conf" >/dev/null <<CONF
port = $PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '/tmp'
hot_standby = on
hba_file = '$HBA'
ident_file = '/etc/postgresql/$VERSION/main/pg_ident.conf'
CONF
as_postgres "$BIN/pg_ctl" -D "$DATA" -l "$DATA/replica.log" -w -t 60 start
for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p "$PORT" && break; sleep 1; done
echo "replica: streaming from 127.0.0.1:5432 on 127.0.0.1:$PORT ($DATA)"
