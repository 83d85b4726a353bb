//! CEL (Common Expression Language) for the expressions of an `AuthenticationConfiguration`,
//! on the `cel` crate (cel-rust): the standard library with optional values (`claims.?x`,
//! `orValue`), plus the strings and lists extension libraries kube-apiserver also offers.
//! Claims are bound as `claims`, the mapped user as `user` — the names kube-apiserver uses.
//!
//! The environment is built on first use, per thread, and only by `whoami`/`setup`: never on
//! the `get-token` path.

use cel::objects::Key;
use cel::{Context, Env, Value};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::sync::Arc;

thread_local! {
    static ENV: Arc<Env> = Arc::new(build_env());
}

fn build_env() -> Env {
    let mut env = Env::stdlib();
    // Both are registered on a fresh stdlib environment, where their names are free.
    env.add_extension(cel::extensions::strings)
        .expect("the CEL strings extension registers");
    env.add_extension(cel::extensions::lists)
        .expect("the CEL lists extension registers");
    env
}

/// A compiled expression and its source (quoted in messages, as kube-apiserver does).
pub struct Expression {
    pub source: String,
    program: cel::Program,
}

impl Expression {
    /// Compiles `source`; the error is the parser's message on one line.
    pub fn compile(source: &str) -> Result<Expression, String> {
        ENV.with(|env| env.compile(source))
            .map(|program| Expression {
                source: source.to_string(),
                program,
            })
            .map_err(|errors| {
                let text = errors.to_string();
                format!(
                    "the CEL expression {source:?} does not compile: {}",
                    text.split_whitespace().collect::<Vec<_>>().join(" ")
                )
            })
    }

    /// Evaluates with one variable bound (`claims` or `user`) to a JSON value.
    pub fn evaluate(&self, variable: &str, value: &Json) -> Result<Value, String> {
        ENV.with(|env| {
            let mut context = Context::with_env(Arc::clone(env));
            context.add_variable_from_value(variable, from_json(value));
            self.program
                .execute(&context)
                .map_err(|err| format!("evaluating {:?} failed: {err}", self.source))
        })
    }
}

/// Whether `expression` reads `claims.<name>` (also as `claims.?<name>` or `claims["<name>"]`).
/// A textual test on the expression: kube-apiserver's check looks at the compiled form, but the
/// spellings are these.
pub fn reads_claim(expression: &str, name: &str) -> bool {
    let forms = [
        format!("claims.{name}"),
        format!("claims.?{name}"),
        format!("claims[\"{name}\"]"),
        format!("claims['{name}']"),
    ];
    forms.iter().any(|form| {
        expression.match_indices(form.as_str()).any(|(at, _)| {
            // `claims.email` must not be the start of `claims.email_verified`.
            let next = expression[at + form.len()..].chars().next();
            !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

/// JSON as kube-apiserver hands it to CEL (unstructured): integers are `int`, other numbers
/// `double`, objects are maps with string keys.
pub fn from_json(value: &Json) -> Value {
    match value {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::String(Arc::new(s.clone())),
        Json::Array(items) => Value::List(Arc::new(items.iter().map(from_json).collect())),
        Json::Object(map) => {
            let entries: HashMap<Key, Value> = map
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), from_json(v)))
                .collect();
            Value::Map(entries.into())
        }
    }
}

/// The CEL value's type, for messages ("must return a string, got list").
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Int(_) => "int",
        Value::UInt(_) => "uint",
        Value::Float(_) => "double",
        Value::String(_) => "string",
        Value::Bytes(_) => "bytes",
        Value::Bool(_) => "bool",
        Value::Null => "null",
        _ => "another type",
    }
}
