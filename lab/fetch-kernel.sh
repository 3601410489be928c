#!/bin/sh
# Fetch one of Debian's kernel images with apt-get download and unpack it under
# $CACHE/KVER (vmlinuz + modules, depmod'ed). Never installs it as the host kernel.
# Usage: fetch-kernel.sh 6.1|6.12   -> prints KVER
set -eu
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${LAB_CACHE:-$here/cache}
series=$1
case "$series" in
  6.1) pat='^linux-image-6\.1\.0-[0-9]+-amd64-unsigned ' ;;
  6.12) pat='^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned ' ;;
  *) echo "fetch-kernel.sh: unknown series '$series' (6.1 or 6.12)" >&2; exit 2 ;;
esac
# Newest package apt offers for the series (version-sorted).
pkg=$(apt-cache search linux-image | grep -E "$pat" | cut -d' ' -f1 | sort -V | tail -1)
[ -n "$pkg" ] || { echo "fetch-kernel.sh: apt offers no $series image (run apt-get update)" >&2; exit 1; }
kver=${pkg#linux-image-}; kver=${kver%-unsigned}
root=$CACHE/$kver
if [ ! -f "$root/.done" ]; then
  mkdir -p "$CACHE/debs" "$root"
  (cd "$CACHE/debs" && ls "${pkg}"_*.deb >/dev/null 2>&1 || apt-get download "$pkg" >&2)
  dpkg-deb -x "$CACHE/debs/${pkg}"_*.deb "$root"
  depmod -b "$root" "$kver"
  touch "$root/.done"
fi
echo "$kver"
