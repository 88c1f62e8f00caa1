#!/usr/bin/env bash
# Interleaved A/B timing of simulator builds on a noisy shared machine (docs/PERFORMANCE.md,
# "Simulator, fifth round"): runs each `sim_l2chase` binary in turn, ROUNDS times, pinned to one
# CPU, and prints the median, best and worst M hops per CPU second of each; with --instr, the
# instructions per hop instead (cachegrind, the difference of two hop counts: deterministic).
#   cargo build --release -p memscope-sim --example sim_l2chase && cp target/release/examples/sim_l2chase /tmp/B
#   notes/diagnostics/sim-ab.sh [--instr] ROUNDS "LINES [x]" /tmp/A /tmp/B ...
# LINES: the chase's lines (8388608 = 1 GiB, DRAM-bound; 262144 = 32 MiB, L2-bound); "x": ld.ca.
# HOPS (environment) sets the hops of a timed run (default 1500000).
set -euo pipefail
instr=0
if [ "${1:-}" = "--instr" ]; then instr=1; shift; fi
rounds=${1:?usage: sim-ab.sh [--instr] ROUNDS "LINES [x]" BIN...}
args=${2:?usage: sim-ab.sh [--instr] ROUNDS "LINES [x]" BIN...}
shift 2
if [ $instr = 1 ]; then
  for b in "$@"; do
    # shellcheck disable=SC2086
    a=$(HOPS=200000 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$b" $args 2>&1 | grep "I *refs" | tr -d ', ' | cut -d: -f2)
    # shellcheck disable=SC2086
    c=$(HOPS=400000 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$b" $args 2>&1 | grep "I *refs" | tr -d ', ' | cut -d: -f2)
    echo "$b [$args]: $(( (c - a) / 200000 )) instructions per hop"
  done
  exit 0
fi
export HOPS=${HOPS:-1500000}
declare -A runs
for _ in $(seq "$rounds"); do
  for b in "$@"; do
    # shellcheck disable=SC2086
    v=$(taskset -c 1 "$b" $args | tail -1 | awk '{print $1}')
    runs[$b]="${runs[$b]:-} $v"
  done
done
for b in "$@"; do
  echo "$b [$args]: $(echo ${runs[$b]} | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END{printf "median %.2f, best %.2f, worst %.2f M hops per CPU second (%d runs)", a[int((NR+1)/2)], a[NR], a[1], NR}')"
done
