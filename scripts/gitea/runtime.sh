#!/usr/bin/env bash
# Prepare what test/support/gitea.ts needs to start Gitea, and print it as shell-style KEY=VALUE lines:
#   GITEA_USER=…  GITEA_UID=…  GITEA_GID=…  GITEA_HOME=…  (the install: gitea + options/ templates/ public/)
#
# Gitea refuses to run as root. When the tests run as root (CI containers), this creates a system user
# (default episodic-gitea) once per machine and copies the cached build (scripts/gitea/build.sh) into that
# user's home: ~/.cache under /root is not readable by anyone else. As any other user, the cached build is
# used where it is and Gitea runs as that user.
# Idempotent and safe to run concurrently (a file lock); it never builds: a missing build is an error that
# names the command to run.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHED="$(bash "$HERE/build.sh" --path)"
VERSION="$(bash "$HERE/build.sh" --version)"
RUN_USER="${EPISODIC_GITEA_USER:-episodic-gitea}"
USER_HOME="/var/lib/$RUN_USER"

log() { echo "[gitea-runtime] $*" >&2; }

if [[ ! -x "$CACHED/gitea" ]]; then
  log "ERROR: no Gitea build at $CACHED; run: npm run gitea:build (scripts/gitea/build.sh, once per machine)"
  exit 1
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "GITEA_USER=$(id -un)"
  echo "GITEA_UID=$(id -u)"
  echo "GITEA_GID=$(id -g)"
  echo "GITEA_HOME=$CACHED"
  exit 0
fi

exec 9>"$(dirname "$CACHED")/gitea-runtime.lock"
flock -w 600 9 || { log "ERROR: timed out waiting for the runtime lock"; exit 1; }

if ! id -u "$RUN_USER" >/dev/null 2>&1; then
  log "creating system user $RUN_USER (home $USER_HOME)"
  useradd --system --create-home --home-dir "$USER_HOME" --shell /usr/sbin/nologin "$RUN_USER"
fi
mkdir -p "$USER_HOME"

# A copy per version, replaced atomically; the binary's size and mtime tell a rebuilt cache apart.
INSTALL="$USER_HOME/gitea-$VERSION"
STAMP="$(stat -c '%s %Y' "$CACHED/gitea")"
if [[ ! -x "$INSTALL/gitea" || "$(cat "$INSTALL/.source-stamp" 2>/dev/null)" != "$STAMP" ]]; then
  log "copying $CACHED to $INSTALL (readable by $RUN_USER)"
  STAGE="$INSTALL.tmp.$$"
  rm -rf "$STAGE"
  cp -r "$CACHED" "$STAGE"
  echo "$STAMP" >"$STAGE/.source-stamp"
  chmod -R a+rX "$STAGE"
  rm -rf "$INSTALL"
  mv "$STAGE" "$INSTALL"
fi

echo "GITEA_USER=$RUN_USER"
echo "GITEA_UID=$(id -u "$RUN_USER")"
echo "GITEA_GID=$(id -g "$RUN_USER")"
echo "GITEA_HOME=$INSTALL"
