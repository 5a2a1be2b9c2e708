#!/bin/sh
# Contention counts and syscalls per run of a counted troupe-bench binary.
# Usage: counts.sh BINARY LABEL OUTDIR
# Each run prints the `contention` lines and perf's syscall counts.
set -u
bin=$1; label=$2; out=$3
mkdir -p "$out"
run() { # name, args...
  name=$1; shift
  perf stat -x, -e syscalls:sys_enter_futex,syscalls:sys_enter_sched_yield,context-switches \
    -o "$out/$label-$name.perf" "$bin" "$@" --warmup 0 --samples 1 --contention \
    > "$out/$label-$name.log" 2>&1
}
run mp-t2   mailbox_performance --senders 32 --messages 200000 --threads 2
run mp-t16  mailbox_performance --senders 32 --messages 200000 --threads 16
run mp-t1   mailbox_performance --senders 32 --messages 200000 --threads 1
run st-t2   stress --senders 16 --messages 10000000 --threads 2
run st-t16  stress --senders 16 --messages 10000000 --threads 16
