#!/bin/bash
# A/B of `tollgate serve` builds on one Telegram benchmark binary (docs/benchmarks.md): each
# round runs the speed phase once per variant, alternating, under `perf stat` counting the
# store's `pwrite64` and `fdatasync` calls; then prints one line per round.
#
# usage: benches/ab.sh TAG ROUNDS VARIANT...   (variant V is the binary /tmp/tg_V; results in
# /tmp/TAG_V_ROUND.{txt,perf}; build the benchmark first: cargo bench --bench telegram --no-run)
cd "$(dirname "$0")/.." || exit 1
tag=$1; rounds=$2; shift 2
bench=$(ls target/release/deps/telegram-* | grep -v '\.d$' | head -1)
for r in $(seq 1 $rounds); do
  for v in "$@"; do
    cp /tmp/tg_$v target/release/tollgate
    out=/tmp/${tag}_${v}_$r
    perf stat -a -e 'syscalls:sys_enter_pwrite64,syscalls:sys_enter_fdatasync' -o $out.perf -- env TOLLGATE_BENCH_PHASE=speed $bench --bench > $out.txt 2>&1
  done
done
# Leaves the first variant in place.
cp /tmp/tg_$1 target/release/tollgate
for v in "$@"; do
  echo "== $v"
  for r in $(seq 1 $rounds); do
    out=/tmp/${tag}_${v}_$r
    echo "$(grep 'minimal LLM bot |' $out.txt | awk -F'|' '{print "floor",$3}') $(grep 'tollgate, typing and progress off |' $out.txt | awk -F'|' '{print "tg",$3,"ratio",$5,"p99add",$8}') $(grep -o 'serve [0-9]* µs a message' $out.txt | head -1) first: $(grep 'typing and progress off):' $out.txt | grep -o '= [0-9.]*x') $(grep -o 'serve [0-9]* µs of CPU' $out.txt) floor's first: $(grep 'minimal LLM bot:' $out.txt | grep -o '= [0-9.]*x') pw=$(grep pwrite64 $out.perf | awk '{print $1}') fs=$(grep fdatasync $out.perf | awk '{print $1}')"
  done
done
