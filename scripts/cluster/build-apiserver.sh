#!/usr/bin/env bash
# Build a real kube-apiserver (and a matching etcd) from source ONCE and cache
# them outside the repo. Used by scripts/cluster/up.sh.
#
# Why build from source: there are no prebuilt kube-apiserver downloads
# reachable from CI (only the npm registry, Debian apt and the Go module proxy
# are), but the whole of Kubernetes is published on the Go module proxy as
# k8s.io/kubernetes, so `go build` produces the exact upstream binary.
#
# Why a wrapper module: k8s.io/kubernetes's own go.mod requires every
# k8s.io/* "staging" module at v0.0.0 and points them at ./staging/src/...
# through `replace`. Replace directives of a dependency are ignored by Go, so
# a consumer has to re-state them, pointing each one at the published
# staging module version (v1.X.Y <-> v0.X.Y).
#
# Why etcd from source too (and not Debian's etcd-server): Debian 12 ships
# etcd 3.4.23, which kube-apiserver >= 1.31 treats as NOT supporting
# RequestWatchProgress (needs >= 3.4.31 / 3.5.13). Then the apiserver's watch
# cache only learns the current revision from etcd's 10-minute periodic
# progress notifications, so e.g. a list or watch at a recent resourceVersion
# of an idle resource blocks and ends in "504 Timeout: Too large resource
# version" (measured: 43s). Informers hit exactly that. We build the etcd
# version that k8s.io/kubernetes itself pins in its go.mod (what it is tested
# with); it shares most dependencies with the apiserver build and takes well
# under a minute extra. EPISODIC_ETCD=debian restores the Debian package.
#
# Usage:
#   build-apiserver.sh             build/install whatever is missing (idempotent)
#   build-apiserver.sh --version   print the pinned Kubernetes version
#   build-apiserver.sh --path      print the cached kube-apiserver path
#   build-apiserver.sh --etcd-path print the etcd binary path to use
# The build writes progress to stderr only.
set -euo pipefail

# Pinned release: the newest v1.3x on the Go proxy at the time of writing
# (`go list -m -versions k8s.io/kubernetes`). Its go.mod says `go 1.26.0`, so
# it builds with the preinstalled Go 1.26 without fetching a toolchain.
KUBE_VERSION="${EPISODIC_KUBE_VERSION:-v1.36.3}"
# Staging modules are tagged v0.<minor>.<patch> for release v1.<minor>.<patch>.
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
# "go" (default): etcd built from the Go proxy; "debian": apt's etcd-server.
ETCD_SOURCE="${EPISODIC_ETCD:-go}"

CACHE_DIR="${EPISODIC_CACHE:-$HOME/.cache/episodic}"
BIN="$CACHE_DIR/kube-apiserver-$KUBE_VERSION"
# The etcd version is only known after reading k8s.io/kubernetes's go.mod;
# this small file remembers it so --etcd-path needs no network.
ETCD_VERSION_FILE="$CACHE_DIR/etcd-version-for-$KUBE_VERSION"
BUILD_ROOT="$CACHE_DIR/build"

log() { echo "[build-apiserver] $*" >&2; }

etcd_path() {
  if [[ "$ETCD_SOURCE" == debian ]]; then
    command -v etcd 2>/dev/null || echo /usr/bin/etcd
  elif [[ -f "$ETCD_VERSION_FILE" ]]; then
    echo "$CACHE_DIR/etcd-$(cat "$ETCD_VERSION_FILE")"
  else
    echo "$CACHE_DIR/etcd-unknown-run-build-apiserver.sh-first"
  fi
}

case "${1:-}" in
  --version) echo "$KUBE_VERSION"; exit 0 ;;
  --path) echo "$BIN"; exit 0 ;;
  --etcd-path) etcd_path; exit 0 ;;
  "") ;;
  *) echo "usage: $0 [--version|--path|--etcd-path]" >&2; exit 2 ;;
esac

# ---------------------------------------------------------------------------
# Opt-in: etcd from Debian (EPISODIC_ETCD=debian). See the header for why it
# is not the default.
# ---------------------------------------------------------------------------
install_debian_etcd() {
  if command -v etcd >/dev/null 2>&1 || [[ -x /usr/bin/etcd ]]; then
    return 0
  fi
  log "etcd not found; installing Debian package etcd-server"
  local SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  # Refresh package lists only if apt does not know the package yet (fresh
  # images often have empty lists); skip the slow round-trip otherwise.
  if ! apt-cache show etcd-server >/dev/null 2>&1; then
    $SUDO apt-get update -qq >&2
  fi
  # The package's postinst tries to start a system etcd; without a running
  # init system that is denied harmlessly. We never use its default ports.
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends etcd-server >&2
}

# Everything below needs the Go toolchain, which may not be on PATH on CI.
setup_go() {
  if ! command -v go >/dev/null 2>&1; then
    export PATH="$PATH:/usr/local/go/bin"
  fi
  command -v go >/dev/null 2>&1 || { log "ERROR: go not found (expected /usr/local/go/bin/go)"; exit 1; }
  # GOTOOLCHAIN=local: never download a different Go toolchain; if the
  # pinned release ever needs a newer Go we want a clear error instead.
  export GOTOOLCHAIN=local
  # -mod=mod: let the go command fill in go.sum for the generated modules.
  export GOFLAGS="-mod=mod"
  # Static binaries: no dependency on the host's libc, no C compiler needed.
  export CGO_ENABLED=0
}

# Path of the go.mod of a module version in the module cache (downloads it).
module_gomod() {
  go mod download -json "$1" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p'
}

# go build into a temp file, then rename: a half-written binary must never
# look "cached" to the next run.
build_to() {
  local out="$1"; shift
  local tmp="$out.tmp.$$"
  if ! go build -trimpath -o "$tmp" "$@" >&2; then
    rm -f "$tmp"
    return 1
  fi
  mv "$tmp" "$out"
}

need_apiserver=false
[[ -x "$BIN" ]] || need_apiserver=true
need_etcd=false
if [[ "$ETCD_SOURCE" == debian ]]; then
  install_debian_etcd
elif [[ ! -x "$(etcd_path)" ]]; then
  need_etcd=true
fi

if [[ $need_apiserver == false && $need_etcd == false ]]; then
  log "cached: $BIN, $(etcd_path)"
  exit 0
fi

setup_go
mkdir -p "$CACHE_DIR" "$BUILD_ROOT"
start_all=$(date +%s)
log "go: $(go version)"

# Read the release's go.mod: the staging replace list, godebug line and the
# etcd version are taken from the release itself rather than hard-coded here
# (they change between minors, e.g. cri-streaming/streaming appeared in 1.36).
UPSTREAM_MOD="$(cd "$BUILD_ROOT" && module_gomod "k8s.io/kubernetes@$KUBE_VERSION")"
[[ -f "$UPSTREAM_MOD" ]] || { log "ERROR: could not download go.mod of k8s.io/kubernetes@$KUBE_VERSION"; exit 1; }

# ---------------------------------------------------------------------------
# kube-apiserver
# ---------------------------------------------------------------------------
if [[ $need_apiserver == true ]]; then
  WRAPPER_DIR="$BUILD_ROOT/kube-apiserver-$KUBE_VERSION"
  log "building kube-apiserver $KUBE_VERSION (staging modules $STAGING_VERSION) in $WRAPPER_DIR"
  log "the first build takes several minutes (downloads ~700 MB of modules, then compiles)"
  mkdir -p "$WRAPPER_DIR"
  cd "$WRAPPER_DIR"
  # Start clean: files from an interrupted run must not leak in.
  rm -f go.mod go.sum

  GO_DIRECTIVE=$(grep -E '^go [0-9]' "$UPSTREAM_MOD" | head -n1)
  GODEBUG_LINE=$(grep -E '^godebug ' "$UPSTREAM_MOD" | head -n1 || true)

  # Staging modules = those upstream replaces with ./staging/src/... AND
  # requires at v0.0.0. Unrequired staging dirs (e.g. k8s.io/sample-cli-plugin)
  # are left out: they are not in the build and not all are on the proxy.
  mapfile -t STAGING < <(
    grep -oE 'k8s\.io/[A-Za-z0-9._/-]+ => \./staging/' "$UPSTREAM_MOD" | awk '{print $1}' | sort -u
  )
  REPLACES=""
  for mod in "${STAGING[@]}"; do
    if grep -qE "^[[:space:]]*${mod//./\\.} v0\.0\.0([[:space:]]|$)" "$UPSTREAM_MOD"; then
      REPLACES+=$'\t'"$mod => $mod $STAGING_VERSION"$'\n'
    fi
  done
  [[ -n "$REPLACES" ]] || { log "ERROR: found no staging modules in upstream go.mod"; exit 1; }
  log "replacing $(printf '%s' "$REPLACES" | grep -c '=>') staging modules with $STAGING_VERSION"

  # The `tool` directive (Go >= 1.24) records the kube-apiserver main package
  # as a dependency of this module so `go mod tidy` keeps exactly what it
  # needs (the classic blank-import tools.go cannot import a main package).
  cat >go.mod <<EOF
// Generated by episodic scripts/cluster/build-apiserver.sh. Do not edit.
module episodic.local/kube-apiserver-build

$GO_DIRECTIVE

$GODEBUG_LINE

require k8s.io/kubernetes $KUBE_VERSION

tool k8s.io/kubernetes/cmd/kube-apiserver

replace (
$REPLACES)
EOF

  t=$(date +%s)
  log "go mod tidy (downloading modules)..."
  go mod tidy >&2
  log "go mod tidy took $(( $(date +%s) - t ))s"

  # Stamp the version like upstream's hack/lib/version.sh, so /version and
  # `kubectl version` report the release instead of v0.0.0-master. There is
  # no git checkout, so the commit stays unknown; the release's publication
  # time on the proxy is a reproducible build date.
  BUILD_DATE=$(go list -m -json "k8s.io/kubernetes@$KUBE_VERSION" |
    sed -n 's/^[[:space:]]*"Time": "\(.*\)",\{0,1\}$/\1/p' | head -n1)
  BUILD_DATE="${BUILD_DATE:-1970-01-01T00:00:00Z}"
  MINOR="${KUBE_VERSION#v1.}"; MINOR="${MINOR%%.*}"
  LDFLAGS="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    LDFLAGS+=" -X $pkg.gitVersion=$KUBE_VERSION"
    LDFLAGS+=" -X $pkg.gitMajor=1 -X $pkg.gitMinor=$MINOR"
    LDFLAGS+=" -X $pkg.gitTreeState=archive -X $pkg.buildDate=$BUILD_DATE"
  done

  t=$(date +%s)
  log "go build k8s.io/kubernetes/cmd/kube-apiserver (slow: ~5 min on 2 cores)..."
  build_to "$BIN" -ldflags "$LDFLAGS" k8s.io/kubernetes/cmd/kube-apiserver
  log "kube-apiserver build took $(( $(date +%s) - t ))s -> $BIN ($("$BIN" --version))"
fi

# ---------------------------------------------------------------------------
# etcd, at the version k8s.io/kubernetes pins (go.etcd.io/etcd/server/v3).
# ---------------------------------------------------------------------------
if [[ $need_etcd == true ]]; then
  ETCD_VERSION=$(grep -E '^[[:space:]]*go\.etcd\.io/etcd/server/v3 v' "$UPSTREAM_MOD" | awk '{print $2}' | head -n1)
  [[ -n "$ETCD_VERSION" ]] || { log "ERROR: no go.etcd.io/etcd/server/v3 in k8s.io/kubernetes@$KUBE_VERSION go.mod"; exit 1; }
  echo "$ETCD_VERSION" >"$ETCD_VERSION_FILE"
  ETCD_BIN="$CACHE_DIR/etcd-$ETCD_VERSION"
  if [[ ! -x "$ETCD_BIN" ]]; then
    WRAPPER_DIR="$BUILD_ROOT/etcd-$ETCD_VERSION"
    log "building etcd $ETCD_VERSION in $WRAPPER_DIR"
    mkdir -p "$WRAPPER_DIR"
    cd "$WRAPPER_DIR"
    rm -f go.mod go.sum
    # etcd's server module has `replace` directives for its sibling modules
    # (so `go install ...@version` refuses it); as a plain dependency those
    # are ignored and the published siblings at the same version are used.
    ETCD_GO=$(grep -E '^go [0-9]' "$(module_gomod "go.etcd.io/etcd/server/v3@$ETCD_VERSION")" | head -n1)
    cat >go.mod <<EOF
// Generated by episodic scripts/cluster/build-apiserver.sh. Do not edit.
module episodic.local/etcd-build

$ETCD_GO

require go.etcd.io/etcd/server/v3 $ETCD_VERSION

tool go.etcd.io/etcd/server/v3
EOF
    t=$(date +%s)
    go mod tidy >&2
    build_to "$ETCD_BIN" -ldflags "-s -w" go.etcd.io/etcd/server/v3
    log "etcd build took $(( $(date +%s) - t ))s -> $ETCD_BIN"
  fi
fi

log "total: $(( $(date +%s) - start_all ))s"
