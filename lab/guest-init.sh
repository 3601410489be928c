#!/bin/busybox sh
# /init of the lab's initramfs: load the device drivers, set up pm_print_times, ftrace
# (power:*, rpm:*, sleepgraph-style delay kprobes), run N suspend/resume cycles, then write
# the captures as a tar onto the ahci disk (the host reads it after qemu exits).
# Parameters come from the kernel command line: lab.mode=mem|freeze lab.cycles=N
# lab.async=0|1 lab.quirks=HEX (USB port quirks) lab.rpm=0|1 lab.kprobes=0|1 lab.idle=S
# lab.sched=0|1 (sched_switch and sched_waking during the cycles: what a thread waited for).
# "LAB:" lines on the console drive the host (lab/run_lab.py): it wakes freeze cycles.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs dev /dev
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || mount -t debugfs debugfs /sys/kernel/debug
T=/sys/kernel/tracing; [ -d $T/events ] || T=/sys/kernel/debug/tracing
say() { echo "LAB: $*" > /dev/console; }
arg() { v=$(tr ' ' '\n' < /proc/cmdline | sed -n "s/^lab\.$1=//p" | tail -1); echo "${v:-$2}"; }
MODE=$(arg mode mem); N=$(arg cycles 3); ASYNC=$(arg async 1); QUIRKS=$(arg quirks "")
RPM=$(arg rpm 0); KPROBES=$(arg kprobes 1); IDLE=$(arg idle 2); SCHED=$(arg sched 0)
say "boot $(uname -r) mode=$MODE cycles=$N async=$ASYNC quirks=$QUIRKS rpm=$RPM kprobes=$KPROBES sched=$SCHED"

for m in $(cat /etc/modules); do insmod /lib/modules/$m 2>/dev/null; done
ip link set lo up 2>/dev/null
sleep 3   # USB enumeration and the disks settle

ata_disk() { for b in /sys/block/sd*; do readlink -f "$b" | grep -q /ata && echo "/dev/${b##*/}"; done; }
if [ "$(arg sleepgraph 0)" = 1 ]; then   # lab/run_lab.py --sleepgraph: a bookworm root on the ahci disk
  mkdir -p /newroot && mount -t ext4 "$(ata_disk)" /newroot && exec switch_root /newroot /lab-sleepgraph.sh
  say "no root for sleepgraph"; poweroff -f
fi

echo 1 > /sys/power/pm_print_times
echo 1 > /sys/power/pm_debug_messages   # "PM: resume of devices complete after N msecs"
echo "$ASYNC" > /sys/power/pm_async
[ "$MODE" = mem ] && echo deep > /sys/power/mem_sleep
if [ -n "$QUIRKS" ]; then
  for q in /sys/bus/usb/devices/*/*-port*/quirks; do echo "$QUIRKS" > "$q"; done
fi
if [ "$RPM" = 1 ]; then   # runtime PM everywhere it is offered, short autosuspend delays
  for c in $(find /sys/devices -name control -path '*/power/*'); do echo auto > "$c" 2>/dev/null; done
  for d in $(find /sys/devices -name autosuspend_delay_ms); do echo 100 > "$d" 2>/dev/null; done
fi

echo global > $T/trace_clock
echo 16384 > $T/buffer_size_kb
echo 0 > $T/tracing_on
for e in power/device_pm_callback_start power/device_pm_callback_end power/suspend_resume rpm; do
  echo 1 > $T/events/$e/enable
done
# sleepgraph's names: NAME_cal on entry, NAME_ret on return (udelay probes __const_udelay).
PROBES=""
if [ "$KPROBES" = 1 ]; then
  for spec in "msleep msleep time=%di:s32" "msleep_interruptible msleep_interruptible time=%di:s32" \
      "usleep_range usleep_range min=%di:s32 max=%si:s32" \
      "usleep_range_state usleep_range_state min=%di:s32 max=%si:s32" \
      "schedule_timeout schedule_timeout timeout=%di:s32" "udelay __const_udelay loops=%di:s32"; do
    set -- $spec; name=$1 func=$2; shift 2
    # maxactive 64: many threads sleep in msleep at once during USB resume, and a return
    # probe with too few instances drops the _ret events.
    if echo "p:${name}_cal $func $*" >> $T/kprobe_events 2>/dev/null; then
      # 6.12 (BTF) refuses $retval on a function returning void: then the _ret has no arg1.
      if echo "r64:${name}_ret $func \$retval" >> $T/kprobe_events 2>/dev/null ||
         echo "r64:${name}_ret $func" >> $T/kprobe_events 2>/dev/null ||
         echo "r:${name}_ret $func" >> $T/kprobe_events 2>/dev/null; then
        PROBES="$PROBES $name"
      else
        echo "-:${name}_cal" >> $T/kprobe_events
      fi
    fi
  done
fi
say "kprobes:$PROBES"
# tp_printk prints the same events into the kernel log: both records start (and stop, below)
# at the same point, with no device activity in between
echo > $T/trace
grep -q tp_printk /proc/cmdline && dmesg -c > /dev/null   # busybox has no -C
echo 1 > $T/tracing_on
sleep "$IDLE"

i=1
while [ $i -le "$N" ]; do
  [ -n "$PROBES" ] && echo 1 > $T/events/kprobes/enable
  if [ "$SCHED" = 1 ]; then echo 1 > $T/events/sched/sched_switch/enable; echo 1 > $T/events/sched/sched_waking/enable; fi
  if [ "$MODE" = mem ]; then
    echo 0 > /sys/class/rtc/rtc0/wakealarm; echo +5 > /sys/class/rtc/rtc0/wakealarm
  fi
  say "suspend $i"
  if echo "$MODE" > /sys/power/state; then say "resumed $i"; else say "failed $i"; fi
  [ -n "$PROBES" ] && echo 0 > $T/events/kprobes/enable
  if [ "$SCHED" = 1 ]; then echo 0 > $T/events/sched/sched_switch/enable; echo 0 > $T/events/sched/sched_waking/enable; fi
  sleep "$IDLE"
  i=$((i + 1))
done

echo 0 > $T/tracing_on; dmesg > /out/dmesg.txt
say "collecting"
{
  echo "kernel: $(uname -r)"; echo "cmdline: $(cat /proc/cmdline)"; echo "mode: $MODE"
  echo "cycles: $N"; echo "pm_async: $(cat /sys/power/pm_async)"; echo "kprobes:$PROBES"; echo "sched: $SCHED"
  echo "mem_sleep: $(cat /sys/power/mem_sleep)"
  for q in /sys/bus/usb/devices/*/*-port*/quirks; do echo "quirks: $q $(cat $q)"; done
  grep -H . $T/per_cpu/cpu*/stats 2>/dev/null | grep -E "overrun|dropped"
  sed 's/^/kprobe_events: /' $T/kprobe_events; sed 's/^/tracing_error_log: /' $T/error_log; sed 's/^/kprobe_profile: /' $T/kprobe_profile
} > /out/meta.txt
# a sleepgraph-style stamp first: it names the kernel release for a reader of the ftrace
# alone (the async ordering depends on it: 6.16+)
echo "# suspend-$(date +%m%d%y-%H%M%S) lab $MODE $(uname -r)" > /out/ftrace.txt
cat $T/trace >> /out/ftrace.txt
disk=$(ata_disk)
if [ -n "$disk" ]; then
  tar -cf "$disk" -C /out . && sync && say "saved $disk"
else
  say "no ata disk for the output"
fi
poweroff -f
