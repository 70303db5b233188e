//! The scenario table: every row, in resolution order, decided in one world; a row that
//! disagrees with its expected decision, source and reason code fails the test.

use super::{Row, ceiling, commands, policies, refusals, run, world};

#[test]
fn scenario_table() {
    let w = world();
    let mut rows: Vec<Row> = refusals::rows(&w);
    rows.extend(policies::rows());
    rows.extend(commands::rows());
    rows.extend(ceiling::rows());
    let mut failures = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let got = run(&w, row);
        let got_triple = (
            got.decision.as_str(),
            got.source.as_str(),
            got.code.as_str(),
        );
        if got_triple != row.expect {
            failures.push(format!(
                "row {i}: {} {} {} {} → expected {:?}, got {:?}",
                row.mode, row.sandbox, row.tool, row.args, row.expect, got_triple
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
