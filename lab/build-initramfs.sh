#!/bin/sh
# Build a busybox-static initramfs for one unpacked Debian kernel: busybox, lab/guest-init.sh
# as /init, and the modules of the lab's emulated devices (dependencies first, decompressed,
# loaded in order by /init).  Usage: [EXTRA_MODS=ext4] [CAPTURE_SH=capture.sh]
# build-initramfs.sh KVER OUT.cpio.gz (CAPTURE_SH: `dpmlens capture`'s script as /capture.sh,
# which /init then runs instead of its own tracing: lab/run_capture.py)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${LAB_CACHE:-$here/cache}
kver=$1 out=$2
root=$CACHE/$kver
[ -f "$root/.done" ] || { echo "build-initramfs.sh: $root not fetched (run fetch-kernel.sh)" >&2; exit 1; }
BUSYBOX=${BUSYBOX:-/bin/busybox}
file -L "$BUSYBOX" | grep -q "statically linked" || { echo "build-initramfs.sh: $BUSYBOX is not static (apt-get install busybox-static)" >&2; exit 1; }
# The drivers of the fixed device set (lab/qemu-devices.txt), in load order.
MODS="virtio_pci virtio_net virtio_rng virtio_balloon e1000 uhci_hcd xhci_pci usbhid hid_generic
usb_storage sd_mod ahci ata_piix snd_hda_intel snd_hda_codec_generic button ${EXTRA_MODS:-}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/lib/modules" "$tmp/proc" "$tmp/sys" "$tmp/dev" "$tmp/out" "$tmp/etc"
cp "$BUSYBOX" "$tmp/bin/busybox"
cp "$here/guest-init.sh" "$tmp/init"; chmod +x "$tmp/init"
if [ -n "${CAPTURE_SH:-}" ]; then   # the script reads CONFIG_HZ where a distribution puts it
  cp "$CAPTURE_SH" "$tmp/capture.sh"
  mkdir -p "$tmp/boot" && cp "$root/boot/config-$kver" "$tmp/boot/" 2>/dev/null || true
fi
: > "$tmp/etc/modules"
for m in $MODS; do
  modprobe -d "$root" -S "$kver" --show-depends "$m" | while read -r kind path _; do
    [ "$kind" = insmod ] || continue
    base=$(basename "$path"); base=${base%.xz}; base=${base%.zst}
    grep -qx "$base" "$tmp/etc/modules" && continue
    case "$path" in
      *.xz) xz -dc "$path" > "$tmp/lib/modules/$base" ;;
      *.zst) zstd -qdc "$path" > "$tmp/lib/modules/$base" ;;
      *) cp "$path" "$tmp/lib/modules/$base" ;;
    esac
    echo "$base" >> "$tmp/etc/modules"
  done
done
echo "$kver" > "$tmp/etc/kver"
(cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) > "$out.tmp"
mv "$out.tmp" "$out"
