#!/usr/bin/env python3
"""What one phase of the Telegram benchmark costs `tollgate serve` beyond another, per message.

Usage: perf_windows.py PERF_SCRIPT_TXT BENCH_STDERR [FREQ [TOP]]

PERF_SCRIPT_TXT is `perf script -F comm,pid,tid,time,ip,sym` of a profile recorded with
`perf record -k CLOCK_MONOTONIC -F FREQ -g -a -- <benchmark built with
-C force-frame-pointers=yes> --bench` (TOLLGATE_BENCH_PHASE=speed); BENCH_STDERR holds the
benchmark's `MARK` lines (their first occurrence: the run with typing and progress off). Serve
processes are those with a thread named `tollgate`. Prints serve's CPU per message in the
repeat bursts (2,500 messages) and the first messages (5,000), by thread, then the functions
whose cost per message grew most: inclusive (a sample counts once for each function on its
stack) and leaf.
"""
import collections, re, sys

script, marks = sys.argv[1], sys.argv[2]
freq = float(sys.argv[3]) if len(sys.argv) > 3 else 1999.0
top = int(sys.argv[4]) if len(sys.argv) > 4 else 60
at = {}
for line in open(marks):
    if line.startswith('MARK '):
        _, what, when = line.split()
        at.setdefault(what, float(when))
windows = {
    'repeat': (at['repeat_start'], at['repeat_end'], 2500),
    'first': (at['first_start'], at['first_end'], 5000),
}
header = re.compile(r'^(\S.*?)\s+(\d+)/(\d+)\s+([\d.]+):')
samples, current, serve = [], None, set()
for line in open(script, errors='replace'):
    if not line.strip():
        if current:
            samples.append(current)
        current = None
    elif not line.startswith((' ', '\t')):
        h = header.match(line)
        current = None
        if h:
            comm = h.group(1).strip()
            if comm == 'tollgate':
                serve.add(int(h.group(2)))
            current = (comm, int(h.group(2)), float(h.group(4)), [])
    elif current is not None:
        parts = line.strip().split(None, 1)
        symbol = re.sub(r'\+0x[0-9a-f]+| \(.*\)$', '', parts[1] if len(parts) > 1 else '?')
        current[3].append(symbol)
if current:
    samples.append(current)
cost = {}
for name, (start, end, messages) in windows.items():
    inclusive, leaf, threads, total = (collections.Counter(), collections.Counter(),
                                       collections.Counter(), 0)
    for comm, pid, time, stack in samples:
        if pid in serve and start <= time <= end:
            total += 1
            threads[comm] += 1
            if stack:
                leaf[stack[0]] += 1
            inclusive.update(set(stack))
    scale = 1e6 / freq / messages
    per = lambda counts: {k: v * scale for k, v in counts.items()}
    cost[name] = (total * scale, per(inclusive), per(leaf), per(threads))
for name, (total, _, _, threads) in cost.items():
    print(f'{name}: {total:.1f} µs a message;',
          ', '.join(f'{t} {v:.1f}' for t, v in sorted(threads.items())))
for kind, i in (('inclusive', 1), ('leaf', 2)):
    print(f'\n{kind}: first messages minus repeat bursts, µs a message')
    first, repeat = cost['first'][i], cost['repeat'][i]
    grown = sorted(set(first) | set(repeat), key=lambda s: repeat.get(s, 0) - first.get(s, 0))
    for s in grown[:top]:
        print(f'{first.get(s, 0) - repeat.get(s, 0):7.1f}  first {first.get(s, 0):7.1f}'
              f'  repeat {repeat.get(s, 0):7.1f}  {s[:150]}')
