//! The shared corpus tables: every row must hold. The copy in `tests/corpus` is always read; the
//! shared originals beside the checkout are read too when present, so new rows count at once.

use std::path::PathBuf;
use tollgate::policy::shell::ShellAnalysis;
use tollgate::policy::shell::approval_key::DEFAULT_PREFIX_BINARIES;

/// `\n` and `\t` in a corpus cell stand for a newline and a tab (a carriage return is written
/// as itself).
fn unescape(cell: &str) -> String {
    let mut out = String::new();
    let mut chars = cell.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.clone().next() {
                Some('n') => {
                    chars.next();
                    out.push('\n');
                    continue;
                }
                Some('t') => {
                    chars.next();
                    out.push('\t');
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

fn rows(name: &str) -> Vec<(String, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("tests/corpus").join(name)];
    let shared = root.join("../shared/corpus").join(name);
    if shared.exists() {
        files.push(shared);
    }
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let (a, b) = line
                .split_once('\t')
                .unwrap_or_else(|| panic!("{}: no tab in {line:?}", file.display()));
            out.push((a.to_string(), b.to_string()));
        }
    }
    assert!(!out.is_empty());
    out
}

fn prefixes() -> Vec<String> {
    DEFAULT_PREFIX_BINARIES
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn denylist_table() {
    let mut failures = Vec::new();
    for (expect, cell) in rows("denylist.tsv") {
        let command = unescape(&cell);
        let analysis = ShellAnalysis::new(&command, &prefixes());
        let ok = match expect.as_str() {
            "block" => analysis.denied.is_some(),
            "too-complex" => analysis.too_complex.is_some(),
            "high-risk" => {
                analysis.denied.is_none()
                    && analysis.too_complex.is_none()
                    && analysis.high_risk.is_some()
            }
            "pass" => analysis.denied.is_none() && analysis.too_complex.is_none(),
            other => panic!("unknown expectation {other}"),
        };
        if !ok {
            failures.push(format!(
                "{expect}\t{command:?}\tdenied={:?} high_risk={:?} too_complex={:?}",
                analysis.denied.map(|d| d.to_string()),
                analysis.high_risk,
                analysis.too_complex
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn approval_key_table() {
    let mut failures = Vec::new();
    for (cell, expect) in rows("approval-key.tsv") {
        let command = unescape(&cell);
        let analysis = ShellAnalysis::new(&command, &prefixes());
        let got = analysis
            .approval_key
            .map_or_else(|| "-".to_string(), |k| k.to_string());
        if got != expect {
            failures.push(format!("{command:?}: expected {expect}, got {got}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
