#!/bin/bash
# counts.sh BIN LABEL OUTDIR: contention counts + perf syscalls, mailbox_performance 32x200000, 1/2/16 workers
b=$1; l=$2; o=$3; mkdir -p $o
for t in 1 2 16; do
  taskset -c 0,1 perf stat -x, -o $o/$l-t$t.perf -e 'syscalls:sys_enter_futex,syscalls:sys_enter_sched_yield,context-switches' $b mailbox_performance --senders 32 --messages 200000 --threads $t --samples 1 --warmup 0 --contention > $o/$l-t$t.txt 2>&1
  printf '%s t=%s rmw=%s cas_fail=%s append354=%s notify=%s lifo_place=%s steal=%s half_written=%s alloc=%s searching_max=%s futex=%s yield=%s cs=%s\n' $l $t \
   $(awk '$2=="rmw"{print $3}' $o/$l-t$t.txt) $(awk '$2=="cas_fail"{print $3}' $o/$l-t$t.txt) \
   "$(awk '$2 ~ /site.rmw.mailbox\/unbounded.rs:3[5-9][0-9]$/ {printf "%s:%s ", $2, $4}' $o/$l-t$t.txt | sed 's/site.rmw.mailbox.unbounded.rs://g; s/ $//; s/ /,/g')" \
   $(awk '$2=="notify"{print $4}' $o/$l-t$t.txt) $(awk '$2=="lifo_place"{print $4}' $o/$l-t$t.txt) $(awk '$2=="steal"{print $4}' $o/$l-t$t.txt) $(awk '$2=="half_written"{print $4}' $o/$l-t$t.txt) $(awk '$2=="alloc"{print $3}' $o/$l-t$t.txt) $(awk '$2=="searching_max"{print $4}' $o/$l-t$t.txt) \
   $(awk -F, '/futex/{print $1}' $o/$l-t$t.perf) $(awk -F, '/sched_yield/{print $1}' $o/$l-t$t.perf) $(awk -F, '/context-switches/{print $1}' $o/$l-t$t.perf)
done
