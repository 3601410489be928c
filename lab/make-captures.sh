#!/bin/sh
# Re-make the lab's capture set (make captures): each capture boots one of Debian's kernels
# under qemu and writes build/lab/NAME/{dmesg,ftrace,meta}.txt; a capture already made is
# kept (delete its folder, or FORCE=1, to redo it). Then the checked-in fixtures
# test-fixtures/lab/NAME/*.gz are re-compressed from them. Downloads are cached in lab/cache.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
OUT=${LAB_OUT:-$top/build/lab}
FIX=$top/test-fixtures/lab
PY=${PYTHON:-python3}
mkdir -p "$OUT"
capture() {  # NAME run_lab.py-arguments...
  name=$1; shift
  if [ -f "$OUT/$name/ftrace.txt" ] && [ -z "${FORCE:-}" ]; then
    echo "captures: $name already made ($OUT/$name)"; return 0
  fi
  echo "captures: $name: run_lab.py $*"
  "$PY" "$here/run_lab.py" --quiet --nice "${LAB_NICE:-5}" "$@" --out "$OUT/$name"
  echo "lab/run_lab.py $*" > "$OUT/$name/command.txt"
}
capture_sleepgraph() {  # NAME KERNEL
  if [ -d "$OUT/$1/sg" ] && [ -z "${FORCE:-}" ]; then echo "captures: $1 already made"; return 0; fi
  "$PY" "$here/run_lab.py" --quiet --nice "${LAB_NICE:-5}" --kernel "$2" --sleepgraph --cycles 3 \
    --boot-timeout 900 --out "$OUT/$1"
  echo "lab/run_lab.py --kernel $2 --sleepgraph --cycles 3" > "$OUT/$1/command.txt"
}
# Small enough to check in (a few hundred KB gzip'ed): the delay kprobes only in the mem runs.
capture k61-mem     --kernel 6.1  --mode mem    --cycles 2
capture k612-mem    --kernel 6.12 --mode mem    --cycles 2 --retries 5
capture k61-freeze  --kernel 6.1  --mode freeze --cycles 2 --no-kprobes
capture k612-freeze --kernel 6.12 --mode freeze --cycles 2 --no-kprobes
capture k61-tp      --kernel 6.1  --mode mem    --cycles 1 --no-kprobes --tp-printk --rpm
capture k612-tp     --kernel 6.12 --mode mem    --cycles 1 --no-kprobes --tp-printk --rpm --retries 5
# a kernel with the 6.16 async ordering (trixie-backports; lab/fetch-kernel.sh)
capture k72-mem     --kernel 7.2  --mode mem    --cycles 2
capture k72-freeze  --kernel 7.2  --mode freeze --cycles 2 --no-kprobes
capture k72-tp      --kernel 7.2  --mode mem    --cycles 1 --no-kprobes --tp-printk --rpm --retries 5
# pm-graph's sleepgraph (-m mem -rtcwake 5 -dev -multi 3 0) in a debootstrapped bookworm root
[ -n "${LAB_NO_SLEEPGRAPH:-}" ] || {
  capture_sleepgraph k61-sleepgraph 6.1
  capture_sleepgraph k612-sleepgraph 6.12
  capture_sleepgraph k72-sleepgraph 7.2
}
# The fixtures: gzip -n (no name or time in the header) keeps them byte-stable.
for name in k61-mem k612-mem k61-freeze k612-freeze k61-tp k612-tp k72-mem k72-freeze k72-tp; do
  d=$OUT/$name; mkdir -p "$FIX/$name"
  for f in dmesg ftrace; do gzip -9nc "$d/$f.txt" > "$FIX/$name/$f.txt.gz"; done
  cp "$d/meta.txt" "$d/command.txt" "$FIX/$name/"
done
# The sleepgraph runs (run_lab.py --sleepgraph): the first test folder of each, for the
# comparison test (sleepgraph's own HTML timeline against dpmlens).
for d in "$OUT"/k61-sleepgraph "$OUT"/k612-sleepgraph "$OUT"/k72-sleepgraph; do
  [ -d "$d/sg" ] || continue
  name=$(basename "$d"); rm -rf "$FIX/$name"; mkdir -p "$FIX/$name"
  test=$(ls -d "$d"/sg/suspend-* | head -1)
  for f in "$test"/*; do gzip -9nc "$f" > "$FIX/$name/$(basename "$f").gz"; done
  cp "$d/meta.txt" "$d/command.txt" "$FIX/$name/" 2>/dev/null || true
done
{
  echo "# Lab captures (made by \`make captures\`; see lab/README.md and docs/traces.md)"
  echo
  echo "Debian's own kernels (6.1 and 6.12 from bookworm, 7.2 from trixie-backports) booted under"
  echo "qemu-system-x86_64 (TCG) with the lab's fixed device set;"
  echo "each folder: \`dmesg.txt.gz\` (pm_print_times, pm_debug_messages), \`ftrace.txt.gz\` (power:*,"
  echo "rpm:*, and in the mem runs sleepgraph-style delay kprobes), \`meta.txt\` (kernel, command"
  echo "line, USB port quirks, kprobes, ring-buffer stats, host load). Regenerate with"
  echo "\`make captures\` (FORCE=1 to redo); nothing here is edited by hand. \`ab/\` holds the"
  echo "A/B experiments: the summaries \`ab-KERNEL.{json,md}\` and every run's ftrace as xz"
  echo "(\`ab/KERNEL/CONFIG/partN/ftrace.txt.xz\`, 1.7 MB in all; no dmesg), written by"
  echo "\`lab/ab_experiment.py --kernel K --cycles 16 --out test-fixtures/lab/ab/ab-K"
  echo "--fixtures test-fixtures/lab/ab\` (\`make lab-ab\` runs it into build/lab)."
  echo
  echo "| folder | kernel | command |"
  echo "|---|---|---|"
  for d in "$FIX"/*/; do
    name=$(basename "$d")
    [ -f "$d/command.txt" ] || continue
    k=$(sed -n 's/^kernel: //p' "$d/meta.txt" | head -1)
    echo "| \`$name\` | $k | \`$(cat "$d/command.txt")\` |"
  done
} > "$FIX/README.md"
du -sh "$FIX"
