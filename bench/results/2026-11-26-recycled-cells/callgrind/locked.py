# usage: locked.py CALLGRIND_OUT BINARY [OBJECT-NAME-SUBSTRING]
# Callgrind run with --dump-instr=yes; prints how often each locked instruction
# (lock prefix, xchg with memory, mfence) of BINARY ran, by function.
import sys,re,collections,subprocess
cg,binp=sys.argv[1],sys.argv[2]
counts=collections.Counter()
def num(tok,prev):
    if tok=='*': return prev
    if tok[0] in '+-': return prev+int(tok,0) if not tok[1:].startswith('0x') else prev+int(tok[0]+str(int(tok[1:],16)))
    return int(tok,0)
names={};pi=0;pl=0;skip=False;obj=None
for line in open(cg):
    if line.startswith('ob='):
        m=re.match(r'ob=\((\d+)\)\s*(.*)',line.strip())
        if m.group(2): names[m.group(1)]=m.group(2)
        obj=names.get(m.group(1)); continue
    if line.startswith('cob='):
        m=re.match(r'cob=\((\d+)\)\s*(.*)',line.strip())
        if m.group(2): names[m.group(1)]=m.group(2)
        continue
    if line.startswith('calls='): skip=True; continue
    if not line or not (line[0].isdigit() or line[0] in '+-*'): continue
    parts=line.split()
    if len(parts)<3: continue
    i=num(parts[0],pi); l=num(parts[1],pl); pi,pl=i,l
    if skip: skip=False; continue
    if obj and (sys.argv[3] if len(sys.argv)>3 else binp.split('/')[-1]) in obj: counts[i]+=int(parts[2])
# objdump lock instrs
out=subprocess.run(['objdump','-d','--no-show-raw-insn','-C',binp],capture_output=True,text=True).stdout
fn=None;res=collections.Counter();tot=0
for ln in out.splitlines():
    m=re.match(r'^([0-9a-f]+) <(.*)>:',ln)
    if m: fn=m.group(2); continue
    m=re.match(r'^\s+([0-9a-f]+):\s+(.*)',ln)
    if not m: continue
    a=int(m.group(1),16); ins=m.group(2)
    if ins.startswith('lock') or (ins.startswith('xchg') and '(' in ins) or ins.startswith('mfence'):
        c=counts.get(a,0)
        if c: res[(fn[:110],ins.split()[0]+' '+ins.split()[1] if len(ins.split())>1 else ins)]+=c; tot+=c
for (f,i),c in res.most_common(60): print(f"{c:9d} {i:20s} {f}")
print("total",tot)
