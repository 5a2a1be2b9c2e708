"""Summarizes alternated runs of `troupe-sharding-bench bench N ROUNDS`.

Each input file holds runs headed `=== run I BINARY load L` (the binary's
label: base = 20f4b85 with the new bench file; new1 = d0d636a, new2 =
340eb07, new3 = f0ac6cc, new4 = bf64aad; in ab11 sleep and yield are
one binary's two retry policies; in ab12-ab13 envswitch = 9a700ac with
the 50 us retry, last = the lookup reuse alone, idmap = 496f618; in
ab16-ab17 and final-check-8447ef6 base7b = 7bef281, clock = b619090,
typed = facb5f3, nohops = 8447ef6, counts = the received frames
counted per batch; ab16 was disturbed by a build from
its second run on) followed by the bench's round
lines. Prints, per binary, the mean rates of the four shapes, the mean
and median of the per-round ratios entity / remote (1 actor, 64 actors,
and 64 entities against the one fixed actor), and the CPU ratios.

    python3 summarize.py ab*.txt
"""
import re,sys,statistics as st
def parse(path):
    cur=None; res={}
    for line in open(path):
        m=re.match(r'=== run (\d) (\w+) load ([\d.]+)',line)
        if m: cur=m.group(2); res.setdefault(cur,{'r':[],'cpu':[],'runs':0,'load':[]}); res[cur]['runs']+=1; res[cur]['load'].append(float(m.group(3))); continue
        m=re.match(r'round (\d): 1 actor: remote tell (\d+)/s, entity tell (\d+)/s, ratio [\d.]+; 64 actors: remote tell (\d+)/s, entity tell (\d+)/s',line)
        if m: res[cur]['r'].append(tuple(map(float,m.groups()[1:]))); continue
        m=re.match(r'round (\d): CPU per tell .*1 actor: remote (\d+) ns, entity (\d+) ns.*64 actors: remote (\d+) ns, entity (\d+) ns',line)
        if m: res[cur]['cpu'].append(tuple(map(float,m.groups()[1:])))
    return res
for path in sys.argv[1:]:
    print("##",path)
    for b,d in parse(path).items():
        r=d['r']; c=d['cpu']
        mean=lambda i: st.mean(x[i] for x in r)
        q1=[x[1]/x[0] for x in r]; q64=[x[3]/x[2] for x in r]; q641=[x[3]/x[0] for x in r]
        c1=[x[0]/x[1] for x in c]; c64=[x[2]/x[3] for x in c]
        print(f"{b:5} runs {d['runs']} rounds {len(r)} load {min(d['load']):.1f}-{max(d['load']):.1f} | remote1 {mean(0)/1e6:.2f}M ent1 {mean(1)/1e6:.2f}M remote64 {mean(2)/1e6:.2f}M ent64 {mean(3)/1e6:.2f}M | ratio1 mean {st.mean(q1):.2f} med {st.median(q1):.2f} | ratio64 mean {st.mean(q64):.2f} med {st.median(q64):.2f} | ent64/remote1 {st.mean(q641):.2f} | cpu1 {st.mean(c1):.2f} cpu64 {st.mean(c64):.2f} | cpu ns r1 {st.mean(x[0] for x in c):.0f} e1 {st.mean(x[1] for x in c):.0f} r64 {st.mean(x[2] for x in c):.0f} e64 {st.mean(x[3] for x in c):.0f}")
