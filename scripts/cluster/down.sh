#!/usr/bin/env bash
# Stop the test control plane started by scripts/cluster/up.sh and wipe its
# state (etcd data, keys/certs, kubeconfig). Keeps .cluster/bin (kubectl,
# helm) and the logs (useful after a CI failure; up.sh truncates them), and
# never touches the cached kube-apiserver build in ~/.cache/episodic.
#
# Idempotent: safe to run when nothing is running or nothing was ever started.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Resolved: a worktree whose .cluster links to another checkout's must see that cluster as its own.
CLUSTER_DIR="$(realpath -m "$ROOT/.cluster")"

log() { echo "[cluster:down] $*" >&2; }

if [[ ! -d "$CLUSTER_DIR" ]]; then
  log "nothing to do (no .cluster directory)"
  exit 0
fi

# Same lock as up.sh, so we never tear down a cluster while it is starting.
# up.sh sets EPISODIC_CLUSTER_LOCK_HELD=1 when it calls us with the lock
# already held (taking it again here would deadlock).
if [[ "${EPISODIC_CLUSTER_LOCK_HELD:-}" != 1 ]]; then
  exec 9>"$CLUSTER_DIR/.up.lock"
  flock -w 3600 9 || { log "ERROR: timed out waiting for $CLUSTER_DIR/.up.lock"; exit 1; }
fi

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Stop one component: SIGTERM its process group (up.sh starts each daemon
# with setsid, so pid == pgid), wait up to 15s for a clean shutdown, then
# SIGKILL. The /proc cmdline check makes sure a stale pid file can never make
# us kill an unrelated process that happens to have reused the pid.
stop() {
  local name="$1" pidfile="$CLUSTER_DIR/$1.pid" pid
  if [[ ! -f "$pidfile" ]]; then
    log "$name: not running (no pid file)"
    return 0
  fi
  pid="$(cat "$pidfile")"
  if ! pid_is "$pid" "$name"; then
    log "$name: not running (stale pid $pid)"
    rm -f "$pidfile"
    return 0
  fi
  log "$name: stopping pid $pid"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do
    pid_is "$pid" "$name" || break
    sleep 0.5
  done
  if pid_is "$pid" "$name"; then
    log "$name: did not exit after 15s; sending SIGKILL"
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    sleep 0.5
  fi
  rm -f "$pidfile"
  log "$name: stopped"
}

# apiserver first: it is etcd's only client, and stopping etcd first makes
# the apiserver spend its shutdown retrying etcd.
stop kube-apiserver
stop etcd

rm -rf "$CLUSTER_DIR/etcd" "$CLUSTER_DIR/pki" \
  "$CLUSTER_DIR/kubeconfig" "$CLUSTER_DIR/cluster.env"
log "removed etcd data, keys/certs and kubeconfig (kept .cluster/bin and logs)"
