#!/bin/bash
# usage: mp.sh BIN SENDERS MESSAGES THREADS -> median ns/msg line
b=$1; s=$2; m=$3; t=$4; shift 4
taskset -c 0,1 $b mailbox_performance --senders $s --messages $m --threads $t --samples 5 --warmup 1 "$@" 2>&1 | grep -E "^  mailbox_performance" | sed "s/^/$(basename $(dirname $b)) s=$s t=$t: /"
