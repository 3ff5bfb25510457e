#!/usr/bin/env bash
# The PostgreSQL limit beside the load run of docsync-bench: single-row inserts from 8 clients
# (pgbench, 2 threads) on a throw-away cluster set up as the tests' is (fsync and synchronous
# commit off), with no HTTP and no docsync node in between. Three scripts:
#   plain    one INSERT of a new row a transaction;
#   counter  the same INSERT taking its change number from the counter row in the statement
#            (what a docsync single write's storing statement does);
#   docsync  what a docsync single write sends: the revision's read, then the storing statement
#            with the counter and pg_notify (two autocommit statements).
# Usage: scripts/pg-limit.sh [seconds per script, default 10]
set -euo pipefail
seconds=${1:-10}
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
work=$(mktemp -d /tmp/pg-limit.XXXXXX)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
as=()
if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$work"; as=(setpriv --reuid=postgres --regid=postgres --init-groups --); fi
"${as[@]}" "$bin/initdb" -D "$work/data" -A trust -U postgres -E UTF8 --no-sync >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as[@]}" "$bin/postgres" -D "$work/data" -p "$port" -k "$work" -c listen_addresses=127.0.0.1 \
    -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 >"$work/log" 2>&1 &
pid=$!
until "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; do sleep 0.1; done
psql=("$bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1)
"${psql[@]}" <<'SQL'
CREATE TABLE docsync_counter (id int PRIMARY KEY, seq bigint NOT NULL);
INSERT INTO docsync_counter VALUES (1, 0);
CREATE TABLE document (id text PRIMARY KEY, doc_type text NOT NULL, body text NOT NULL, rev bigint NOT NULL,
    seq bigint NOT NULL UNIQUE, updated_at bigint NOT NULL, deleted_at bigint, created_at bigint NOT NULL,
    stored_at bigint NOT NULL, writer text);
CREATE INDEX document_type ON document (doc_type, id);
CREATE INDEX document_type_seq ON document (doc_type, seq);
CREATE SEQUENCE plain_seq START 1000000000;
SQL
cat >"$work/plain.sql" <<'SQL'
INSERT INTO document VALUES (gen_random_uuid()::text, 'load', '{"docType":"load","n":1}', 1, nextval('plain_seq'), 0, NULL, 0, 0, 'w');
SQL
cat >"$work/counter.sql" <<'SQL'
WITH c AS (UPDATE docsync_counter SET seq = seq + 1 WHERE id = 1 RETURNING seq)
INSERT INTO document SELECT gen_random_uuid()::text, 'load', '{"docType":"load","n":1}', 1, c.seq, 0, NULL, 0, 0, 'w' FROM c;
SQL
cat >"$work/docsync.sql" <<'SQL'
\set n random(1, 1000000000)
SELECT rev FROM document WHERE id = 'x' || :n;
WITH c AS (UPDATE docsync_counter SET seq = seq + 1 WHERE id = 1 RETURNING seq),
i AS (INSERT INTO document SELECT gen_random_uuid()::text, 'load', '{"docType":"load","n":1}', 1, c.seq, 0, NULL, 0, 0, 'w' FROM c RETURNING seq)
SELECT seq, pg_notify('docsync_changes', seq::text)::text FROM i;
SQL
for script in plain counter docsync; do
    tps=$("$bin/pgbench" -n -h 127.0.0.1 -p "$port" -U postgres -c 8 -j 2 -T "$seconds" -f "$work/$script.sql" postgres 2>/dev/null |
        sed -n 's/^tps = \([0-9.]*\).*/\1/p')
    printf '%-8s %s writes/s\n' "$script" "$tps"
done
