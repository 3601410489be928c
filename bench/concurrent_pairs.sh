#!/bin/bash
# Paired CPU of `dpmlens check -j 1` for two server trees run AT THE SAME TIME, one per core
# (taskset), the cores swapped every pair: on a shared VM both runs of a pair meet the same host
# state, so their ratio varies far less than sequential pairs' (BENCHMARKS.md, issue 30).
#
#   bench/concurrent_pairs.sh TREE_A TREE_B [KERNEL_SUBDIR]   (N=6 pairs by default)
# TREE_*: a checkout or `git archive` copy holding server/, rules/, grammars/.
# KERNEL_SUBDIR: default $BENCH_KERNEL/drivers (BENCH_KERNEL: /work/linux/linux-source-6.12).
set -eu
A=$(realpath "$1"); B=$(realpath "$2")
DIR=${3:-${BENCH_KERNEL:-/work/linux/linux-source-6.12}/drivers}
N=${N:-6}
PY=$(realpath "$(dirname "$0")/../.venv/bin/python")
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores" >&2; exit 2; }
[ -d "$DIR" ] || { echo "no kernel tree at $DIR" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
run() {  # tree core out
  taskset -c "$2" /usr/bin/time -f "%U %S" -o "$3" env PYTHONPATH="$1/server" "$PY" -c \
    'import sys; from dpmlens.cli import main; sys.exit(main())' check --no-cache --no-config \
    -q -j 1 --fail-level none -f json -o /dev/null "$DIR" >/dev/null 2>&1
}
echo "$(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg); A=$A B=$B dir=$DIR"
for i in $(seq 1 "$N"); do
  if [ $((i % 2)) = 1 ]; then ca=0; cb=1; else ca=1; cb=0; fi
  run "$A" $ca "$TMP/a" & run "$B" $cb "$TMP/b" & wait
  a=$(awk '{print $1+$2}' "$TMP/a"); b=$(awk '{print $1+$2}' "$TMP/b")
  echo "pair $i: A (core $ca) $a s, B (core $cb) $b s, A/B $(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.3f", a/b}')"
done
echo "$(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
