//! The SQLite store's reads, as a worker's start makes them: a key a new session does not have
//! yet, one it has, and an empty prefix scan (its tool grants). The store holds 10,000
//! sessions' rows, all in the database (nothing pending), and nothing is written meanwhile:
//! this is a read's cost between two of the committer's applies. A `MemoryStore` read of the
//! same key runs in the same process as the baseline, so figures can be read as ratios on a
//! noisy machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use tollgate::store::{MemoryStore, SqliteStore, Store};

const SESSIONS: u32 = 10_000;

fn key(n: u32) -> Vec<u8> {
    format!("telegram:{}", 100_000 + n).into_bytes()
}

fn fill(store: &dyn Store) {
    let transcript = vec![b'x'; 200];
    for n in 0..SESSIONS {
        store.put("transcripts", &key(n), &transcript).unwrap();
        store
            .put("session_activity", &key(n), b"\0\0\0\0\0\0\0\0a")
            .unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path(), 16).unwrap();
    fill(&sqlite);
    // Everything into the database: the reads below find nothing pending.
    sqlite.flush_for_stop().unwrap();
    let memory = MemoryStore::new();
    fill(&memory);
    let missing = key(SESSIONS + 1);
    let present = key(SESSIONS / 2);

    let mut group = c.benchmark_group("store read");
    group.bench_function("memory store, a missing key (baseline)", |b| {
        b.iter(|| black_box(memory.get("transcripts", black_box(&missing)).unwrap()))
    });
    group.bench_function("sqlite, a missing key", |b| {
        b.iter(|| black_box(sqlite.get("transcripts", black_box(&missing)).unwrap()))
    });
    group.bench_function("sqlite, a present key", |b| {
        b.iter(|| black_box(sqlite.get("transcripts", black_box(&present)).unwrap()))
    });
    group.bench_function("sqlite, an empty prefix scan", |b| {
        b.iter(|| {
            black_box(
                sqlite
                    .scan_prefix("allowlist.tools", black_box(&missing))
                    .unwrap(),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
