#!/usr/bin/env bash
# Stand-in agent for bench/leash: prints one Claude Code `--output-format json` result per run, $0.10 each.
# FLEET_KIND picks its behaviour; the episode number comes from EPISODIC_EPISODE (episodic sets it, and the
# bash loop in ralph.sh does too), so nothing but the agent's work touches the workspace.
n=${EPISODIC_EPISODE:?EPISODIC_EPISODE is not set}
cat >/dev/null # the prompt, on stdin

result() { # subtype is_error text
  printf '{"type":"result","subtype":"%s","is_error":%s,"duration_ms":5,"num_turns":1,"result":"%s","session_id":"bench-leash","total_cost_usd":0.1,"usage":{"input_tokens":1000,"output_tokens":100,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}\n' "$1" "$2" "$3"
}

case "${FLEET_KIND:?}" in
  stuck) # motion without progress: reads, thinks, changes nothing
    result success false "I reviewed the plan again; the next step needs more thought before changing anything." ;;
  slow) # real but slow work: one step lands every third episode, done after twelve
    if (( n % 3 == 0 )); then echo "step $n" >> progress.txt; fi
    if (( n >= 12 )); then result success false "All steps are done and the tests pass. <promise>DONE</promise>"
    else result success false "Still working on step $(( n / 3 + 1 ))."; fi ;;
  error) # the same failure every time
    result success false "Error: npm test failed in src/app.ts:12:3 - TypeError: Cannot read properties of undefined (reading 'id')"
    exit 1 ;;
  finish4) # a step per episode, done on the fourth
    echo "step $n" >> progress.txt
    if (( n >= 4 )); then result success false "Finished every step. <promise>DONE</promise>"
    else result success false "Did step $n."; fi ;;
  *) echo "unknown FLEET_KIND $FLEET_KIND" >&2; exit 2 ;;
esac
