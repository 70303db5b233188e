//! Argument specs for built-in tools: one table per tool that both produces the JSON schema the
//! model sees and validates what the model sends (unknown, missing or mistyped → an error the
//! model sees; the run goes on).

use serde_json::{Map, Value, json};

/// The JSON type of one argument.
#[derive(Clone, Copy, Debug)]
pub enum ArgKind {
    String,
    Integer,
    Boolean,
    Object,
    Array,
    /// One of these strings.
    OneOf(&'static [&'static str]),
}

/// One argument of a built-in tool.
#[derive(Clone, Copy, Debug)]
pub struct ArgSpec {
    pub name: &'static str,
    pub kind: ArgKind,
    pub required: bool,
    pub description: &'static str,
}

/// A required argument.
#[must_use]
pub const fn required(name: &'static str, kind: ArgKind, description: &'static str) -> ArgSpec {
    ArgSpec {
        name,
        kind,
        required: true,
        description,
    }
}

/// An optional argument.
#[must_use]
pub const fn optional(name: &'static str, kind: ArgKind, description: &'static str) -> ArgSpec {
    ArgSpec {
        name,
        kind,
        required: false,
        description,
    }
}

/// The JSON schema of an argument table.
#[must_use]
pub fn schema(specs: &[ArgSpec]) -> Value {
    let mut properties = Map::new();
    for spec in specs {
        let mut property = match spec.kind {
            ArgKind::String => json!({"type": "string"}),
            ArgKind::Integer => json!({"type": "integer"}),
            ArgKind::Boolean => json!({"type": "boolean"}),
            ArgKind::Object => json!({"type": "object"}),
            ArgKind::Array => json!({"type": "array"}),
            ArgKind::OneOf(values) => json!({"type": "string", "enum": values}),
        };
        property["description"] = Value::from(spec.description);
        properties.insert(spec.name.to_string(), property);
    }
    let required: Vec<&str> = specs
        .iter()
        .filter(|s| s.required)
        .map(|s| s.name)
        .collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// Checks `args` against the table; the error says what to fix.
pub fn validate<'a>(
    args: &'a Value,
    specs: &[ArgSpec],
) -> Result<&'a Map<String, Value>, super::ToolError> {
    check(args, specs).map_err(super::ToolError::InvalidArguments)
}

fn check<'a>(args: &'a Value, specs: &[ArgSpec]) -> Result<&'a Map<String, Value>, String> {
    let Some(object) = args.as_object() else {
        return Err(format!(
            "arguments must be a JSON object, got {}",
            type_name(args)
        ));
    };
    for key in object.keys() {
        if !specs.iter().any(|s| s.name == key) {
            let known: Vec<&str> = specs.iter().map(|s| s.name).collect();
            return Err(format!(
                "unknown argument `{key}`; this tool takes {}",
                if known.is_empty() {
                    "no arguments".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
    }
    for spec in specs {
        match object.get(spec.name) {
            None | Some(Value::Null) if spec.required => {
                return Err(format!("missing required argument `{}`", spec.name));
            }
            None | Some(Value::Null) => {}
            Some(value) => {
                let ok = match spec.kind {
                    ArgKind::String => value.is_string(),
                    ArgKind::Integer => value.is_i64() || value.is_u64(),
                    ArgKind::Boolean => value.is_boolean(),
                    ArgKind::Object => value.is_object(),
                    ArgKind::Array => value.is_array(),
                    ArgKind::OneOf(values) => value.as_str().is_some_and(|v| values.contains(&v)),
                };
                if !ok {
                    let expected = match spec.kind {
                        ArgKind::OneOf(values) => format!("one of {}", values.join(", ")),
                        other => format!("{other:?}").to_lowercase(),
                    };
                    return Err(format!(
                        "argument `{}` must be {expected}, got {}",
                        spec.name,
                        type_name(value)
                    ));
                }
            }
        }
    }
    Ok(object)
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A string argument already validated present.
#[must_use]
pub fn string<'a>(args: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[ArgSpec] = &[
        required("path", ArgKind::String, "p"),
        optional("method", ArgKind::OneOf(&["GET", "POST"]), "m"),
    ];

    #[test]
    fn validates() {
        assert!(validate(&json!({"path": "x"}), SPECS).is_ok());
        assert!(validate(&json!({"path": "x", "method": "GET"}), SPECS).is_ok());
        let errors = [
            (json!([]), "must be a JSON object"),
            (json!({}), "missing required argument `path`"),
            (json!({"path": 1}), "`path` must be string"),
            (json!({"path": "x", "pth": 1}), "unknown argument `pth`"),
            (json!({"path": "x", "method": "PUT"}), "one of GET, POST"),
        ];
        for (args, expect) in errors {
            let err = validate(&args, SPECS).unwrap_err();
            assert!(
                matches!(&err, super::super::ToolError::InvalidArguments(m) if m.contains(expect)),
                "{args}: {err}"
            );
        }
        assert_eq!(schema(SPECS)["required"], json!(["path"]));
    }
}
