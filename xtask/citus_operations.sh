#!/usr/bin/env bash
# The Citus operations run of docs/operations.md ("Measured on a cluster"): two instances on one
# coordinator database, a third worker added and the shards rebalanced under tokenize load, then
# the worker holding most tenants stopped for 15 s and started again; xtask/citus_load.py reads
# every acknowledged token back. For a local cluster of a coordinator (5440) and two workers
# (5441, 5442) whose data directories are under $CITUS_DIR (coordinator, worker1, worker2), each
# with wal_level = logical; run as root (the nodes run as postgres). Machine-local: not in CI.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/target/release/tokenvault}
CITUS_DIR=${CITUS_DIR:-/tmp/citus-cluster}
PGBIN=/usr/lib/postgresql/15/bin
C="psql -qAt -h 127.0.0.1 -U postgres"
DB=tv_ops
W3=$CITUS_DIR/worker3
as_pg() { runuser -u postgres -- "$@"; }
# a clean third node, not yet in the cluster
[ -f $W3/postmaster.pid ] && as_pg $PGBIN/pg_ctl -D $W3 -m fast -w stop >/dev/null || true
rm -rf $W3; as_pg $PGBIN/initdb -D $W3 -U postgres --auth=trust >/dev/null
cat >> $W3/postgresql.conf <<CONF
shared_preload_libraries = 'citus'
listen_addresses = '127.0.0.1'
port = 5443
max_connections = 200
unix_socket_directories = '$CITUS_DIR'
wal_level = logical
max_worker_processes = 128
CONF
as_pg $PGBIN/pg_ctl -D $W3 -l $W3/log -w start >/dev/null
$C -p 5440 -d postgres -c "SELECT citus_remove_node('127.0.0.1', 5443)" 2>/dev/null || true
for p in 5440 5441 5442 5443; do
  $C -p $p -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" 2>/dev/null
  $C -p $p -c "CREATE DATABASE $DB" 2>/dev/null
  $C -p $p -d $DB -c "CREATE EXTENSION citus"
done
$C -p 5440 -d $DB -c "SELECT citus_set_coordinator_host('127.0.0.1', 5440)" >/dev/null
for p in 5441 5442; do $C -p 5440 -d $DB -c "SELECT citus_add_node('127.0.0.1', $p)" >/dev/null; done
export DATABASE_URL=postgres://postgres@127.0.0.1:5440/$DB
export TOKENVAULT_MASTER_KEY=$(head -c32 /dev/urandom | base64)
export TOKENVAULT_LOG=warn
work=${WORK:-/tmp/tokenvault-citus-ops}; rm -rf $work; mkdir -p $work
$BIN migrate > $work/migrate.log 2>&1
for i in 1 2; do
  mkdir -p $work/d$i
  TOKENVAULT_DATA_DIR=$work/d$i TOKENVAULT_LISTEN=127.0.0.1:1808$i $BIN serve > $work/server$i.log 2>&1 &
  echo $! > $work/server$i.pid
done
for i in 1 2; do until curl -sf http://127.0.0.1:1808$i/health >/dev/null; do sleep 0.2; done; done
echo "[" > $work/tenants.json
for i in $(seq 1 16); do
  out=$(TOKENVAULT_DATA_DIR=$work/d1 $BIN tenants create --name ops-$i)
  tid=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tenant"]["id"])')
  mkey=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["management_key"])')
  key=$(curl -sf -X POST http://127.0.0.1:18081/applications -H "SVC-API-KEY: $mkey" -H 'Content-Type: application/json' \
    -d '{"name":"load","type":"private","permissions":["token:create","token:read"],"rules":[{"priority":1,"container":"/","transform":"reveal","permissions":["token:read"]}]}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
  [ $i -gt 1 ] && echo "," >> $work/tenants.json
  echo "{\"tenant_id\":\"$tid\",\"key\":\"$key\"}" >> $work/tenants.json
done
echo "]" >> $work/tenants.json
nodes() {
  $C -p 5440 -d $DB -c "SELECT right(t.id::text, 6) || '@' || s.nodeport FROM tenants t JOIN citus_shards s ON s.table_name = 'tokens'::regclass AND s.shardid = get_shard_id_for_distribution_column('tokens', t.id) WHERE t.name LIKE 'ops-%' ORDER BY 1" | tr '\n' ' '
}
echo "placement before: $(nodes)"
python3 $ROOT/xtask/citus_load.py --servers http://127.0.0.1:18081,http://127.0.0.1:18082 \
  --tenants $work/tenants.json --seconds 600 --stop-file $work/stop --report $work/report.json > $work/load.log 2>&1 &
load=$!
t0=$(date +%s.%N); at() { python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')"; }
sleep 10
echo "t=$(at)s add worker 5443"; $C -p 5440 -d $DB -c "SELECT citus_add_node('127.0.0.1', 5443)" >/dev/null
echo "t=$(at)s rebalance start: $($C -p 5440 -d $DB -c 'SELECT citus_rebalance_start()')"
until [ "$($C -p 5440 -d $DB -c "SELECT state FROM citus_rebalance_status()")" = "finished" ]; do
  st=$($C -p 5440 -d $DB -c "SELECT state FROM citus_rebalance_status()"); [ "$st" = failed ] && { echo "rebalance failed"; $C -p 5440 -d $DB -c "SELECT details FROM citus_rebalance_status()"; break; }
  sleep 0.5
done
echo "t=$(at)s rebalance $($C -p 5440 -d $DB -c "SELECT state FROM citus_rebalance_status()")"
echo "placement after: $(nodes)"
$C -p 5440 -d $DB -c "SELECT nodeport, count(*) FROM citus_shards GROUP BY 1 ORDER BY 1" | tr '\n' ' '; echo
sleep 5
victim=$($C -p 5440 -d $DB -c "SELECT s.nodeport FROM tenants t JOIN citus_shards s ON s.table_name = 'tokens'::regclass AND s.shardid = get_shard_id_for_distribution_column('tokens', t.id) WHERE t.name LIKE 'ops-%' GROUP BY 1 ORDER BY (count(*) < 16) DESC, count(*) DESC LIMIT 1")
dir=$(case $victim in 5441) echo worker1;; 5442) echo worker2;; 5443) echo worker3;; esac)
echo "t=$(at)s stop worker $victim"; as_pg $PGBIN/pg_ctl -D $CITUS_DIR/$dir -m fast -w stop >/dev/null
sleep 15
echo "t=$(at)s start worker $victim"; as_pg $PGBIN/pg_ctl -D $CITUS_DIR/$dir -l $CITUS_DIR/$dir/log -w start >/dev/null
sleep 10
touch $work/stop
wait $load || echo "load exited $?"
cat $work/load.log | tail -60
for i in 1 2; do kill $(cat $work/server$i.pid); done
