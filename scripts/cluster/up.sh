#!/usr/bin/env bash
# Start a real Kubernetes control plane (etcd + kube-apiserver) for tests,
# the same way controller-runtime's envtest does: two local processes on
# random loopback ports, no nodes, no kubelet, no containers.
#
#   npm run cluster:up     (idempotent: exits 0 at once if already healthy)
#   npm run cluster:down   (stops it and wipes its data)
#
# Outputs (all under .cluster/, which is git-ignored):
#   .cluster/kubeconfig    admin kubeconfig, context "episodic-test"
#   .cluster/cluster.env   ports, pids, versions (shell-sourceable)
#   .cluster/bin/          kubectl + helm (scripts/cluster/tools.sh)
#   .cluster/*.log         etcd.log, kube-apiserver.log
#
# What this control plane does NOT do, because there is no
# kube-controller-manager, kube-scheduler or kubelet (same as envtest):
#   * Namespaces: only default, kube-system, kube-public and kube-node-lease
#     exist (the apiserver creates those itself). Tests must create any other
#     namespace explicitly. Deleting a namespace leaves it Terminating forever
#     (the namespace controller that empties and finalizes it is missing).
#   * ServiceAccounts: the "default" ServiceAccount is NOT auto-created in new
#     namespaces, no token Secrets are generated and no kube-root-ca.crt
#     ConfigMap is published. The TokenRequest API does work (the apiserver
#     has the signing key), so `kubectl create token SA` works once the
#     ServiceAccount exists. The ServiceAccount admission plugin is disabled
#     so Pods can be created without one.
#   * Garbage collection: ownerReferences are stored but NOT acted on.
#     Deleting an owner (default background propagation) removes only the
#     owner; its dependents stay. With propagationPolicy Foreground or Orphan
#     the owner keeps its foregroundDeletion/orphan finalizer and is never
#     removed. Tests that rely on GC must delete dependents themselves or
#     assert on the ownerReferences instead.
#   * Pods are never scheduled or run; Deployments create no ReplicaSets; Jobs
#     create no Pods. Only the API (storage, validation, admission, RBAC, CRDs,
#     watches, TokenRequest, SubjectAccessReview, ...) is real.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SCRIPTS="$ROOT/scripts/cluster"
# Resolved: a worktree whose .cluster links to another checkout's must see that cluster as its own.
CLUSTER_DIR="$(realpath -m "$ROOT/.cluster")"
KUBECONFIG_PATH="$CLUSTER_DIR/kubeconfig"
STATE="$CLUSTER_DIR/cluster.env"
KUBECTL="$CLUSTER_DIR/bin/kubectl"
PKI="$CLUSTER_DIR/pki"
# How long to wait for kube-apiserver to become ready. It takes ~5s on an
# idle 2-core box; leave generous headroom for loaded CI machines.
READY_TIMEOUT="${EPISODIC_CLUSTER_READY_TIMEOUT:-180}"

log() { echo "[cluster:up] $*" >&2; }

mkdir -p "$CLUSTER_DIR"

# flock and setsid are util-linux, part of every Debian/Ubuntu base system.
for cmd in flock setsid; do
  command -v "$cmd" >/dev/null 2>&1 || { log "ERROR: '$cmd' (util-linux) is required"; exit 1; }
done

# Serialize concurrent callers (node --test runs test files in parallel and
# each may call ensureCluster()): the second one waits here and then finds
# the cluster healthy instead of starting a second one on top of it.
# The daemons are started with fd 9 closed (see start_daemon) so they never
# hold this lock. Generous timeout: the holder may be doing the first build.
LOCK="$CLUSTER_DIR/.up.lock"
exec 9>"$LOCK"
flock -w 3600 9 || { log "ERROR: timed out waiting for $LOCK (another cluster:up/down?)"; exit 1; }

# shellcheck source=lib.sh
source "$SCRIPTS/lib.sh"

healthy() {
  [[ -f "$STATE" && -f "$KUBECONFIG_PATH" && -x "$KUBECTL" ]] || return 1
  local APISERVER_PID="" ETCD_PID=""
  # shellcheck source=/dev/null
  source "$STATE"
  pid_is "$ETCD_PID" etcd && pid_is "$APISERVER_PID" kube-apiserver || return 1
  # Both processes live: a slow answer means a busy machine (parallel tests, benchmarks), not a dead
  # cluster. Wiping it would pull the rug from under every test using it, so be patient first.
  local deadline=$((SECONDS + ${EPISODIC_HEALTH_PATIENCE:-90}))
  until "$KUBECTL" --kubeconfig "$KUBECONFIG_PATH" --request-timeout=10s \
    get --raw /readyz >/dev/null 2>&1; do
    (( SECONDS < deadline )) || return 1
    pid_is "$APISERVER_PID" kube-apiserver || return 1
    sleep 2
  done
}

# First word of a process's command line (the binary it was started as).
exe_of() { tr '\0' '\n' 2>/dev/null <"/proc/$1/cmdline" | head -n1; }

if healthy; then
  # shellcheck source=/dev/null
  source "$STATE"
  log "already up and healthy: $APISERVER_URL (kube-apiserver $KUBE_VERSION)"
  log "kubeconfig: $KUBECONFIG_PATH"
  # A running cluster is never restarted behind the back of tests that may
  # be using it; just point out when it predates the current scripts/pins.
  want_apiserver="$(bash "$SCRIPTS/build-apiserver.sh" --path)"
  want_etcd="$(bash "$SCRIPTS/build-apiserver.sh" --etcd-path)"
  if [[ "$(exe_of "$APISERVER_PID")" != "$want_apiserver" || "$(exe_of "$ETCD_PID")" != "$want_etcd" ]]; then
    log "WARNING: it runs $(exe_of "$APISERVER_PID") + $(exe_of "$ETCD_PID"),"
    log "WARNING: not the current $want_apiserver + $want_etcd."
    log "WARNING: restart it when nothing uses it: npm run cluster:down && npm run cluster:up"
  fi
  exit 0
fi

# Anything left over (crashed apiserver, stale pids, old data) is wiped so we
# always start from a known-empty etcd. We keep holding the lock and tell
# down.sh so (it would otherwise wait for the lock we hold).
if [[ -e "$STATE" || -e "$CLUSTER_DIR/etcd" || -e "$PKI" ]]; then
  log "found a stale or unhealthy cluster; cleaning it up first"
  EPISODIC_CLUSTER_LOCK_HELD=1 bash "$SCRIPTS/down.sh"
fi

# 1. Binaries. build-apiserver.sh is a no-op when the cached kube-apiserver
#    and etcd exist (first run: several minutes of `go build`).
bash "$SCRIPTS/build-apiserver.sh"
APISERVER_BIN="$(bash "$SCRIPTS/build-apiserver.sh" --path)"
ETCD_BIN="$(bash "$SCRIPTS/build-apiserver.sh" --etcd-path)"
KUBE_VERSION="$(bash "$SCRIPTS/build-apiserver.sh" --version)"
bash "$SCRIPTS/tools.sh"
# openssl generates the keys below; minimal images may lack it.
if ! command -v openssl >/dev/null 2>&1; then
  log "installing openssl (apt)"
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  apt-cache show openssl >/dev/null 2>&1 || $SUDO apt-get update -qq >&2
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >&2
fi

# 2. Ports. Random ports so that several checkouts / CI jobs can run side by
#    side and never collide with a real etcd on 2379. We pick from
#    20000-32767, below Linux's ephemeral range (32768+), so an outgoing
#    connection's source port cannot grab it between our check and the bind.
#    A port is free if nothing accepts a connection on it.
#    free_port assigns to the named variable (not `$(...)`, whose subshell
#    would lose USED_PORTS and could hand out the same port twice).
USED_PORTS=" "
free_port() {
  local port _
  for _ in $(seq 1 100); do
    port=$(( 20000 + RANDOM % 12768 ))
    [[ "$USED_PORTS" == *" $port "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      USED_PORTS+="$port "
      printf -v "$1" '%s' "$port"
      return 0
    fi
  done
  log "ERROR: could not find a free port"; exit 1
}
free_port ETCD_CLIENT_PORT
free_port ETCD_PEER_PORT
free_port APISERVER_PORT
ETCD_URL="http://127.0.0.1:$ETCD_CLIENT_PORT"
APISERVER_URL="https://127.0.0.1:$APISERVER_PORT"

# Tail a log and fail. Used whenever a component does not come up.
die_with_log() {
  local msg="$1" logfile="$2"
  log "ERROR: $msg"
  log "---- last 40 lines of $logfile ----"
  tail -n 40 "$logfile" >&2 || true
  log "---- end of $logfile ----"
  log "cleaning up (npm run cluster:down)"
  EPISODIC_CLUSTER_LOCK_HELD=1 bash "$SCRIPTS/down.sh" || true
  exit 1
}

# Start a daemon in its own session/process group (setsid), detached from
# our stdin/stdout/stderr. Detaching the streams matters: when up.sh is run
# by node's execFile, node waits for the pipes to close, which would never
# happen if the daemon inherited them. Likewise fd 9 (the lock) is closed,
# or the daemon would hold the lock for its whole life and the next up.sh
# would wait forever. Own process group = down.sh can kill it and any
# children with one signal. setsid execs in place (we are not a group
# leader when backgrounded), so $! is the daemon's pid and its pgid.
start_daemon() {
  local pidfile="$1" logfile="$2"; shift 2
  : >"$logfile"
  setsid nohup "$@" </dev/null >>"$logfile" 2>&1 9>&- &
  echo "$!" >"$pidfile"
}

# Whether a daemon started here still runs: the pid exists and is not a zombie (a dead daemon stays one
# until this shell reaps it). Not pid_is: its /proc/PID/cmdline check gave false negatives while the pid
# was still exec'ing (setsid -> nohup -> daemon; the cmdline reads empty inside an exec), and CI twice
# reported "kube-apiserver exited during startup" with an empty log for an apiserver that was starting.
# The pid is our own child here, so it cannot have been reused.
pid_alive() {
  local state
  state="$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)"
  [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

# 3. etcd: single member, loopback only, data under .cluster/etcd.
#    --unsafe-no-fsync (as envtest does): a test cluster's data is disposable
#    and fsync per write makes every API write several times slower.
log "starting etcd ($("$ETCD_BIN" --version 2>/dev/null | sed -n 1p)) on $ETCD_URL"
# Older etcd (e.g. Debian's 3.4 with EPISODIC_ETCD=debian) lacks the flag.
NO_FSYNC=()
if "$ETCD_BIN" --help 2>&1 | grep -q -- '--unsafe-no-fsync'; then
  NO_FSYNC=(--unsafe-no-fsync)
fi
mkdir -p "$CLUSTER_DIR/etcd"
chmod 700 "$CLUSTER_DIR/etcd"   # etcd warns/refuses on a world-readable data dir
start_daemon "$CLUSTER_DIR/etcd.pid" "$CLUSTER_DIR/etcd.log" \
  "$ETCD_BIN" \
  --name episodic \
  --data-dir "$CLUSTER_DIR/etcd" \
  --listen-client-urls "$ETCD_URL" \
  --advertise-client-urls "$ETCD_URL" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "episodic=http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster-state new \
  "${NO_FSYNC[@]}"
ETCD_PID=$(cat "$CLUSTER_DIR/etcd.pid")

# Wait until etcd accepts connections (kube-apiserver would retry anyway,
# but failing here gives a much clearer error).
for i in $(seq 1 60); do
  (exec 3<>"/dev/tcp/127.0.0.1/$ETCD_CLIENT_PORT") 2>/dev/null && break
  pid_alive "$ETCD_PID" || die_with_log "etcd exited during startup" "$CLUSTER_DIR/etcd.log"
  [[ $i -eq 60 ]] && die_with_log "etcd did not listen on $ETCD_URL within 30s" "$CLUSTER_DIR/etcd.log"
  sleep 0.5
done

# 4. Credentials.
#    - Service-account key pair: kube-apiserver signs (TokenRequest) and
#      verifies ServiceAccount JWTs with it.
#    - Static token file: the simplest admin credential. Group
#      system:masters is bound to cluster-admin by RBAC's bootstrap policy
#      (and bypasses authorization entirely).
#    - Serving cert: kube-apiserver generates a self-signed CA + cert for
#      127.0.0.1 into --cert-dir on first start; we trust that CA below.
mkdir -p "$PKI/serving"
chmod 700 "$PKI"
openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
ADMIN_TOKEN="$(openssl rand -hex 32)"
echo "$ADMIN_TOKEN,admin,admin,\"system:masters\"" >"$PKI/tokens.csv"
chmod 600 "$PKI/tokens.csv" "$PKI/sa.key"

# 5. kube-apiserver with envtest-style flags.
#    --advertise-address 127.0.0.1 is needed on hosts whose only interface is
#    loopback (the default picks the default-route interface). Because a
#    loopback address is not a valid Endpoints IP, the endpoint reconciler
#    would then log an error every 10s; --endpoint-reconciler-type none turns
#    it off (the "kubernetes" Service exists but has no endpoints, which
#    nothing here needs since no pods run).
log "starting kube-apiserver $KUBE_VERSION on $APISERVER_URL"
start_daemon "$CLUSTER_DIR/kube-apiserver.pid" "$CLUSTER_DIR/kube-apiserver.log" \
  "$APISERVER_BIN" \
  --etcd-servers "$ETCD_URL" \
  --cert-dir "$PKI/serving" \
  --secure-port "$APISERVER_PORT" \
  --bind-address 127.0.0.1 \
  --advertise-address 127.0.0.1 \
  --service-cluster-ip-range 10.0.0.0/24 \
  --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$PKI/sa.pub" \
  --service-account-signing-key-file "$PKI/sa.key" \
  --authorization-mode RBAC \
  --disable-admission-plugins ServiceAccount \
  --token-auth-file "$PKI/tokens.csv" \
  --allow-privileged=true \
  --endpoint-reconciler-type none
APISERVER_PID=$(cat "$CLUSTER_DIR/kube-apiserver.pid")

# 6. Wait for the generated serving cert, then write the kubeconfig. The
#    cert file holds the serving cert followed by its self-signed CA, which
#    is what we trust (no insecure-skip-tls-verify needed).
CA_FILE="$PKI/serving/apiserver.crt"
deadline=$(( $(date +%s) + READY_TIMEOUT ))
until [[ -s "$CA_FILE" ]]; do
  pid_alive "$APISERVER_PID" ||
    die_with_log "kube-apiserver exited during startup" "$CLUSTER_DIR/kube-apiserver.log"
  (( $(date +%s) < deadline )) ||
    die_with_log "kube-apiserver wrote no serving cert within ${READY_TIMEOUT}s" "$CLUSTER_DIR/kube-apiserver.log"
  sleep 0.5
done

umask 077   # kubeconfig contains the admin token
cat >"$KUBECONFIG_PATH" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: episodic-test
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $(base64 -w0 <"$CA_FILE")
users:
- name: episodic-test-admin
  user:
    token: $ADMIN_TOKEN
contexts:
- name: episodic-test
  context:
    cluster: episodic-test
    user: episodic-test-admin
    namespace: default
current-context: episodic-test
EOF
umask 022

# 7. Wait for /readyz: etcd reachable, RBAC bootstrap roles and system
#    namespaces created, all post-start hooks done.
log "waiting for $APISERVER_URL/readyz (timeout ${READY_TIMEOUT}s)"
start_wait=$(date +%s)
until "$KUBECTL" --kubeconfig "$KUBECONFIG_PATH" --request-timeout=5s \
    get --raw /readyz >/dev/null 2>&1; do
  pid_alive "$APISERVER_PID" ||
    die_with_log "kube-apiserver exited during startup" "$CLUSTER_DIR/kube-apiserver.log"
  (( $(date +%s) < deadline )) ||
    die_with_log "kube-apiserver not ready within ${READY_TIMEOUT}s" "$CLUSTER_DIR/kube-apiserver.log"
  sleep 1
done
log "ready after $(( $(date +%s) - start_wait ))s"

cat >"$STATE" <<EOF
# Written by scripts/cluster/up.sh; read by up.sh/down.sh and tests.
KUBE_VERSION=$KUBE_VERSION
APISERVER_URL=$APISERVER_URL
APISERVER_PORT=$APISERVER_PORT
APISERVER_PID=$APISERVER_PID
APISERVER_BIN=$APISERVER_BIN
ETCD_BIN=$ETCD_BIN
ETCD_URL=$ETCD_URL
ETCD_PID=$ETCD_PID
KUBECONFIG_PATH=$KUBECONFIG_PATH
EOF

# 8. Smoke test with the real kubectl: the API answers and our token is
#    cluster-admin.
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG_PATH" "$@"; }
k get namespaces >&2
can="$(k auth can-i '*' '*' 2>&1 || true)"
[[ "$can" == "yes" ]] ||
  die_with_log "admin token is not cluster-admin (kubectl auth can-i '*' '*' said: $can)" "$CLUSTER_DIR/kube-apiserver.log"

log "up: $APISERVER_URL (kube-apiserver $KUBE_VERSION, etcd $ETCD_URL)"
log "use: $KUBECTL --kubeconfig $KUBECONFIG_PATH get ns"
