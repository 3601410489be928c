#!/bin/sh
# An ext4 image of a minimal Debian bookworm (debootstrap, python3) with pm-graph's
# sleepgraph.py, for run_lab.py --sleepgraph: the initramfs mounts it from the ahci disk and
# switch_roots into /lab-sleepgraph.sh, which runs sleepgraph and powers off; the host reads
# /out back with debugfs.  Usage: build-sleepgraph-root.sh OUT.img
set -eu
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${LAB_CACHE:-$here/cache}
out=$1
PMGRAPH=${PMGRAPH:-/work/linux/linux-source-6.12/tools/power/pm-graph}
[ -f "$PMGRAPH/sleepgraph.py" ] || { echo "build-sleepgraph-root.sh: no sleepgraph.py in $PMGRAPH" >&2; exit 1; }
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
root=$CACHE/bookworm-root
if [ ! -x "$root/usr/bin/python3" ]; then
  rm -rf "$root"
  debootstrap --variant=minbase --include=python3 bookworm "$root" "${mirror:-http://deb.debian.org/debian}" >&2
fi
stage=$(mktemp -d "$CACHE/sgroot.XXXXXX"); trap 'rm -rf "$stage"' EXIT
cp -a "$root/." "$stage/"
mkdir -p "$stage/opt/pm-graph" "$stage/out"
cp "$PMGRAPH/sleepgraph.py" "$stage/opt/pm-graph/"
cp /bin/busybox "$stage/bin/busybox"
cat > "$stage/lab-sleepgraph.sh" <<'EOS'
#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs dev /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug; mount -t tracefs tracefs /sys/kernel/tracing
echo "LAB: sleepgraph start" > /dev/console
cd /out && python3 /opt/pm-graph/sleepgraph.py -m mem -rtcwake 5 -dev -multi 3 0 -o /out/sg \
  > /out/sleepgraph.log 2>&1
echo "LAB: sleepgraph exit $?" > /dev/console
dmesg > /out/dmesg-all.txt 2>/dev/null || /bin/busybox dmesg > /out/dmesg-all.txt
sync; echo "LAB: saved" > /dev/console
echo o > /proc/sysrq-trigger
EOS
chmod +x "$stage/lab-sleepgraph.sh"
rm -f "$out.tmp"
mke2fs -q -t ext4 -d "$stage" "$out.tmp" 1536M
mv "$out.tmp" "$out"
