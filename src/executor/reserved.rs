//! Argument keys only the runtime may set. A picker's answer reaches a tool's execute half as
//! `_selectedOptionId` in its arguments; a model that wrote the key itself would be choosing
//! for the human, so it is taken out before the gate sees the call (and the audit notes it).

use serde_json::Value;

/// Where a picker's chosen option goes in the execute arguments.
pub const SELECTED_OPTION: &str = "_selectedOptionId";

/// Removes the keys only the runtime may set from the model's arguments; whether any was there.
pub fn strip_reserved(args: &mut Value) -> bool {
    args.as_object_mut()
        .is_some_and(|map| map.remove(SELECTED_OPTION).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_model_cannot_pick_for_the_human() {
        let mut args = json!({"path": "a.png", "_selectedOptionId": "p/cheap-model"});
        assert!(strip_reserved(&mut args));
        assert_eq!(args, json!({"path": "a.png"}));
        let mut clean = json!({"path": "a.png"});
        assert!(!strip_reserved(&mut clean));
        let mut not_an_object = json!("x");
        assert!(!strip_reserved(&mut not_an_object));
    }
}
