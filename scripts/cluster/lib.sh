# Shared by up.sh and down.sh (sourced; expects CLUSTER_DIR).

# Is the process with this pid alive and running the named binary? Guards
# against acting on a stale pid file whose pid was reused by something else.
pid_is() {
  local pid="$1" name="$2"
  local cmdline
  [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
  cmdline="$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" || return 1
  # Ours = right binary AND its flags point into this checkout's .cluster/.
  [[ "$cmdline" == *"$name"* && "$cmdline" == *"$CLUSTER_DIR/"* ]]
}
