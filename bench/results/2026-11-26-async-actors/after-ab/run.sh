#!/bin/bash
# A = main's HEAD (b3cb933), B = this branch (a2b9ae9); same machine, same session.
A=/tmp/h27-base/target/release/troupe-bench
B=/work/wt/h27/target/release/troupe-bench
O=/tmp/h27bench
cd /work/wt/h27
SYNC="pingpong ring mailbox_performance --round-trips 300000 --rings 10 --actors 300 --laps 100 --senders 10 --messages 30000 --threads 2 --samples 3 --warmup 1"
ASY="async_pingpong async_ask_chain --threads 2 --samples 3 --warmup 1"
for r in 1 2 3; do
  for s in A B; do
    eval BIN=\$$s
    date -u +"round $r sync $s %T" >> $O/log; $BIN $SYNC --json $O/sync-$s-$r.jsonl > $O/sync-$s-$r.txt 2>&1
    date -u +"round $r async $s %T" >> $O/log; $BIN $ASY --json $O/async-$s-$r.jsonl > $O/async-$s-$r.txt 2>&1
  done
done
for r in 1 2; do
  date -u +"round $r peers %T" >> $O/log; uptime >> $O/log
  $B async_pingpong async_ask_chain async_io --peers --threads 2 --samples 3 --warmup 1 --json $O/peers-$r.jsonl > $O/peers-$r.txt 2>&1
done
date -u +"done %T" >> $O/log
