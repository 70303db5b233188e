#!/usr/bin/env python3
"""Where `tollgate serve`'s CPU goes in a frame-pointer profile of the Telegram benchmark.

Usage: perf_shares.py PERF_DATA [SERVE_PID]

Counts, over the samples of one serve process (by default the first with a flusher thread:
the run with typing and progress off), the share whose stack holds each function of interest
(docs/benchmarks.md, "Where serve's CPU goes now"). Record with
`perf record -F 1999 -g -a -- <benchmark built with -C force-frame-pointers=yes> --bench`.
"""
import re,sys,collections,subprocess
data=sys.argv[1]
out=subprocess.run(['perf','script','-i',data,'-F','comm,pid,tid,ip,sym'],capture_output=True,text=True).stdout
samples=[s for s in out.split('\n\n') if s.strip()]
# Serve processes: those with a flusher thread, in the order their samples first appear.
flpids=[]
parsed=[]
for s in samples:
    lines=s.strip().split('\n')
    m=re.match(r'\s*(\S.*?)\s+(\d+)/(\d+)',lines[0])
    if not m: continue
    comm,pid=m.group(1),int(m.group(2))
    frames=[re.sub(r'^\s*[0-9a-f]+\s+','',l).strip() for l in lines[1:]]
    parsed.append((comm,pid,frames))
    if comm.startswith('tollgate-flushe') and pid not in flpids: flpids.append(pid)
serve=flpids[0] if len(sys.argv)<3 else int(sys.argv[2])
mine=[p for p in parsed if p[1]==serve]
n=len(mine)
def share(pred): return 100*sum(1 for p in mine if pred(p))/n
has=lambda pat: (lambda p: any(re.search(pat,f) for f in p[2]))
# A store read or write on an async thread, by the `Store` method's frame. The write pattern also
# names the write-behind store's functions (eedc3a4, reverted), whose profile this read.
READS=r'SqliteStore as tollgate::store::Store>::(get|scan_prefix|scan_from|scan_before)$'
WRITES=r'(SqliteStore as tollgate::store::Store>::(put|insert|delete|remove|compare_and_swap)$)|(SqliteStore::(accept|write)$)|(Pending::write$)'
rows=[
 ('flusher thread', lambda p: p[0].startswith('tollgate-flushe')),
 ('  SQLite on the flusher', lambda p: p[0].startswith('tollgate-flushe') and any('sqlite3_step' in f for f in p[2])),
 ('  pwrite on the flusher', lambda p: p[0].startswith('tollgate-flushe') and any(re.search(r'pwrite',f) for f in p[2])),
 ('  fdatasync on the flusher', lambda p: p[0].startswith('tollgate-flushe') and any('fdatasync' in f for f in p[2])),
 ('committer thread', lambda p: p[0].startswith('tollgate-commit')),
 ('store writes on async threads', lambda p: p[0].startswith('tokio-rt') and has(WRITES)(p)),
 ('store reads on async threads', lambda p: p[0].startswith('tokio-rt') and has(READS)(p)),
 ('audit events', has(r'TeeEvents as tollgate::events::EventSink>::record')),
 ('sending answers', has(r'Bridge>::send_answer')),
 ('model HTTP', has(r'OpenAiProvider::attempt_all')),
 ('opening connections', has(r'reqwest::connect::with_timeout')),
]
print(data,'serve pid',serve,'samples',n)
for name,pred in rows: print('%-32s %5.1f%%'%(name,share(pred)))
# The store's reads on the async threads, by the first tollgate function above the store.
callers=collections.Counter()
for comm,pid,frames in mine:
    if not comm.startswith('tokio-rt'): continue
    for i,f in enumerate(frames):
        if re.search(READS,f):
            caller=next((g for g in frames[i+1:] if 'tollgate::' in g and 'store::Store>' not in g), None)
            callers[caller]+=1
            break
print('store reads by caller:')
for caller,count in callers.most_common(8): print('  %5.1f%% %s'%(100*count/n,caller))
