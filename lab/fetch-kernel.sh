#!/bin/sh
# Fetch one of Debian's kernel images with apt-get download and unpack it under
# $CACHE/KVER (vmlinuz + modules, depmod'ed). Never installs it as the host kernel.
# Usage: fetch-kernel.sh 6.1|6.12|7.2   -> prints KVER
# 6.1 and 6.12 come from the host's own bookworm sources. 7.2 (a kernel with the 6.16 async
# 6.16 async suspend/resume ordering that Debian ships) comes from trixie-backports, read
# through a private apt state under $CACHE/apt: the host's sources are never changed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${LAB_CACHE:-$here/cache}
series=$1
apt_opts=""
case "$series" in
  6.1) pat='^linux-image-6\.1\.0-[0-9]+-amd64-unsigned ' ;;
  6.12) pat='^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned ' ;;
  7.2)
    pat='^linux-image-7\.2\.[0-9]+\+deb13-amd64 '
    a=$CACHE/apt
    mkdir -p "$a/lists/partial" "$a/archives/partial"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${LAB_DEBIAN_MIRROR:-http://deb.debian.org/debian} trixie-backports main" > "$a/sources.list"
    apt_opts="-o Dir::Etc::SourceList=$a/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$a/lists -o Dir::Cache=$a"
    # shellcheck disable=SC2086
    [ -n "$(ls "$a/lists" | grep -v partial)" ] || apt-get $apt_opts update >&2
    ;;
  *) echo "fetch-kernel.sh: unknown series '$series' (6.1, 6.12 or 7.2)" >&2; exit 2 ;;
esac
# Newest package apt offers for the series (version-sorted).
# shellcheck disable=SC2086
pkg=$(apt-cache $apt_opts search linux-image | grep -E "$pat" | cut -d' ' -f1 | sort -V | tail -1)
[ -n "$pkg" ] || { echo "fetch-kernel.sh: apt offers no $series image (run apt-get update)" >&2; exit 1; }
kver=${pkg#linux-image-}; kver=${kver%-unsigned}
# Since trixie the image package is a stub over linux-binary-* (vmlinuz) and linux-modules-*.
debs=$pkg
[ "$series" = 7.2 ] && debs="linux-base-$kver linux-binary-$kver linux-modules-$kver"
root=$CACHE/$kver
if [ ! -f "$root/.done" ]; then
  mkdir -p "$CACHE/debs" "$root"
  # shellcheck disable=SC2086
  for d in $debs; do
    # shellcheck disable=SC2086
    (cd "$CACHE/debs" && ls "${d}"_*.deb >/dev/null 2>&1 || apt-get $apt_opts download "$d" >&2)
    dpkg-deb -x "$CACHE/debs/${d}"_*.deb "$root"
  done
  # merged /usr (trixie): modules under usr/lib/modules, where depmod -b and modprobe -d look
  # under lib/modules
  [ -d "$root/lib" ] || [ ! -d "$root/usr/lib/modules" ] || ln -s usr/lib "$root/lib"
  # ... and the image there too, where run_lab.py looks under boot/
  if [ ! -e "$root/boot/vmlinuz-$kver" ] && [ -f "$root/usr/lib/modules/$kver/vmlinuz" ]; then
    mkdir -p "$root/boot" && ln -s "../usr/lib/modules/$kver/vmlinuz" "$root/boot/vmlinuz-$kver"
  fi
  depmod -b "$root" "$kver"
  touch "$root/.done"
fi
echo "$kver"
