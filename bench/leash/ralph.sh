#!/usr/bin/env bash
# The baseline of bench/leash: a plain Ralph loop like snarktank's ralph.sh. A fresh agent per iteration,
# stopped only by its sentinel in the output or by the iteration cap.
# usage: ralph.sh MAX_ITERATIONS PROMPT_FILE LOG_FILE -- AGENT ARGV...
set -u
max=$1 prompt=$2 log=$3
shift 4
for (( i = 1; i <= max; i++ )); do
  output=$(EPISODIC_EPISODE=$i "$@" < "$prompt" 2>&1)
  printf '%s\n' "$output" >> "$log"
  if grep -q '<promise>DONE</promise>' <<< "$output"; then exit 0; fi
done
exit 1
