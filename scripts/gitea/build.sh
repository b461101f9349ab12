#!/usr/bin/env bash
# Build a real Gitea (the forge the trigger tests talk to) from source ONCE per machine and cache it outside
# the repo, like scripts/cluster/build-apiserver.sh does for kube-apiserver.
#
# Why from source: no prebuilt Gitea download is reachable from CI, but Gitea is published on the Go module
# proxy as code.gitea.io/gitea. `go install ...@version` refuses it (its go.mod has replace directives), so
# the module is downloaded, copied somewhere writable and built inside its own directory, where those
# replace directives apply.
#
# Why options/ templates/ public/ are copied next to the binary: without the `bindata` tag (which needs the
# frontend built with pnpm) the binary embeds no assets and reads them from its work path at run time.
#
# Result (the tests read it through test/support/gitea.ts):
#   ~/.cache/episodic/gitea-v1.26.0/gitea        the binary (cgo: mattn/go-sqlite3)
#   ~/.cache/episodic/gitea-v1.26.0/{options,templates,public}
#
# Usage:
#   build.sh            build whatever is missing (idempotent; 10-35 min the first time on 2 cores)
#   build.sh --path     print the cache directory
#   build.sh --version  print the pinned Gitea version
# The build writes progress to stderr only.
set -euo pipefail

GITEA_VERSION="${EPISODIC_GITEA_VERSION:-v1.26.0}"
CACHE_DIR="${EPISODIC_CACHE:-$HOME/.cache/episodic}"
DEST="$CACHE_DIR/gitea-$GITEA_VERSION"
BUILD_ROOT="$CACHE_DIR/build"
# The go build competes with tests and other builds on small machines; it is never urgent.
NICE="${EPISODIC_GITEA_NICE:-19}"

log() { echo "[build-gitea] $*" >&2; }

case "${1:-}" in
  --path) echo "$DEST"; exit 0 ;;
  --version) echo "$GITEA_VERSION"; exit 0 ;;
  "") ;;
  *) echo "usage: $0 [--path|--version]" >&2; exit 2 ;;
esac

# Complete = the binary and every asset directory; the rename below makes a partial one impossible.
cached() {
  [[ -x "$DEST/gitea" && -d "$DEST/options" && -d "$DEST/templates" && -d "$DEST/public" ]]
}

if cached; then
  log "cached: $DEST"
  exit 0
fi

for cmd in flock nice; do
  command -v "$cmd" >/dev/null 2>&1 || { log "ERROR: '$cmd' is required"; exit 1; }
done
command -v go >/dev/null 2>&1 || export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null 2>&1 || { log "ERROR: go not found (expected /usr/local/go/bin/go)"; exit 1; }
command -v cc >/dev/null 2>&1 || { log "ERROR: a C compiler (cc) is required: Gitea's SQLite driver uses cgo"; exit 1; }
# Never download a different toolchain: a release needing a newer Go should fail clearly here.
export GOTOOLCHAIN=local
export CGO_ENABLED=1
# go.sum ships with the release; nothing may be rewritten. No VCS stamping: the copy is no checkout.
export GOFLAGS="-mod=readonly -buildvcs=false"

mkdir -p "$CACHE_DIR" "$BUILD_ROOT"
# Two concurrent callers (CI and a developer, or two test runs) must not build twice into the same place.
LOCK="$BUILD_ROOT/gitea-$GITEA_VERSION.lock"
exec 9>"$LOCK"
flock -w 3600 9 || { log "ERROR: timed out waiting for $LOCK (another build?)"; exit 1; }
if cached; then
  log "cached (built by a concurrent run): $DEST"
  exit 0
fi

# Leftovers of interrupted runs (we hold the lock, so none is in use).
rm -rf "$DEST".tmp.*
start=$(date +%s)
log "go: $(go version)"
# Downloads into the shared module cache (reused by every later build) and prints where it unpacked.
MOD_DIR=$(cd "$BUILD_ROOT" && go mod download -json "code.gitea.io/gitea@$GITEA_VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
[[ -f "$MOD_DIR/go.mod" ]] || { log "ERROR: could not download code.gitea.io/gitea@$GITEA_VERSION"; exit 1; }

# The module cache is read-only; build in a writable copy. The staging dir is renamed into place only when
# everything is in it.
SRC="$BUILD_ROOT/gitea-src-$GITEA_VERSION"
STAGE="$DEST.tmp.$$"
trap 'rm -rf "$STAGE"' EXIT
# A copy left by an interrupted run may still carry the module cache's read-only modes.
[[ -d "$SRC" ]] && chmod -R u+w "$SRC"
rm -rf "$SRC" "$STAGE"
cp -r "$MOD_DIR" "$SRC"
chmod -R u+w "$SRC"
mkdir -p "$STAGE"

TAGS="sqlite sqlite_unlock_notify"
LDFLAGS="-s -w -X main.Version=${GITEA_VERSION#v} -X 'main.Tags=$TAGS'"
log "go build Gitea $GITEA_VERSION -tags '$TAGS' in $SRC (first time: modules download, then 10-35 min on 2 cores)"
t=$(date +%s)
(cd "$SRC" && nice -n "$NICE" go build -trimpath -tags "$TAGS" -ldflags "$LDFLAGS" -o "$STAGE/gitea" .) >&2
log "go build took $(($(date +%s) - t))s"

cp -r "$SRC/options" "$SRC/templates" "$SRC/public" "$STAGE/"
# Readable by the unprivileged user that runs Gitea (it refuses to run as root).
chmod -R a+rX "$STAGE"
"$STAGE/gitea" --version >&2
rm -rf "$DEST"
mv "$STAGE" "$DEST"
trap - EXIT
rm -rf "$SRC"
log "total: $(($(date +%s) - start))s -> $DEST"
