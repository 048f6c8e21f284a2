//! Trace-line schema (docs/architecture.md §7): a parsed JSON value becomes an [`Op`].
//!
//! Rule kept here: strict, serde-like decoding that also rejects unknown keys
//! (repeated keys never get here: the JSON reader rejects them). Integers are JSON integers without sign, fraction or
//! exponent that fit u64; floats are any JSON number or `NaN`/`Infinity`/
//! `-Infinity`; optional fields may be omitted (and, where the Rust field is an
//! `Option`, be `null`). Every error here becomes `invalid_input`; a `new`
//! line's `"revision"` is only checked to be a string here (which names exist
//! is the harness's business: an unknown one is `invalid_revision`), and every
//! line's optional `"at_ms"` is read but not checked (the harness checks it
//! last, against its clock).

use crate::engine::{HandoffId, HandoffTransferTiming, TransferTimingMode};
use crate::json::Value;
use uuid::Uuid;

// usize fields (token counts, bytes per token) are filled from u64 losslessly.
const _: () = assert!(usize::BITS == 64, "the oracle assumes a 64-bit target");

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Order {
    SourceFirst,
    DestinationFirst,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Fact {
    SourceHeld {
        handoff_id: HandoffId,
        transfer_timing: HandoffTransferTiming,
    },
    DestinationReserved {
        handoff_id: HandoffId,
        transferable_prompt_tokens: usize,
    },
    TransferCompleted {
        handoff_id: HandoffId,
    },
    Failed {
        handoff_id: HandoffId,
    },
    TimedOut {
        handoff_id: HandoffId,
    },
    Canceled {
        handoff_id: HandoffId,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Submitted,
    Accepted,
    Scheduled,
    Applied,
    Noop,
    Failed(String),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    New {
        handoff_id: HandoffId,
        order: Order,
        fallback_transfer_delay_ms: f64,
        /// The `"revision"` string, if the line has one.
        revision: Option<String>,
    },
    Start,
    Fact(Fact),
    Outcome {
        action_id: u64,
        outcome: Outcome,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub coordinator: String,
    pub op: Op,
    /// The line's `"at_ms"`, if it has one: the number, or why it is none. The harness
    /// checks it after the rest of the line (a `new` line's revision name included).
    pub at_ms: Option<Result<f64, String>>,
}

/// The `"coordinator"` string of a line that is a JSON object, if it has one
/// (the last occurrence wins, as in Python's `json.loads`). Used to address
/// the error reply of a malformed line.
pub fn coordinator_hint(value: &Value) -> Option<&str> {
    let Value::Object(members) = value else {
        return None;
    };
    match members.iter().rev().find(|(key, _)| key == "coordinator") {
        Some((_, Value::String(name))) => Some(name),
        _ => None,
    }
}

/// An object's members, checked against the keys it may have.
struct Fields<'a> {
    what: &'a str,
    members: &'a [(String, Value)],
}

impl<'a> Fields<'a> {
    fn new(value: &'a Value, what: &'a str, allowed: &[&str]) -> Result<Self, String> {
        let Value::Object(members) = value else {
            return Err(format!("{what} must be an object, got {}", value.kind()));
        };
        for (i, (key, _)) in members.iter().enumerate() {
            if !allowed.contains(&key.as_str()) {
                return Err(format!(
                    "unknown key {key:?} in {what} (expected one of {allowed:?})"
                ));
            }
            if members[..i].iter().any(|(other, _)| other == key) {
                return Err(format!("duplicate key {key:?} in {what}"));
            }
        }
        Ok(Self { what, members })
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn required(&self, key: &str) -> Result<&'a Value, String> {
        self.get(key)
            .ok_or_else(|| format!("missing key {key:?} in {}", self.what))
    }

    fn string(&self, key: &str) -> Result<&'a str, String> {
        match self.required(key)? {
            Value::String(s) => Ok(s),
            other => Err(self.wrong(key, "a string", other)),
        }
    }

    fn u64(&self, key: &str) -> Result<u64, String> {
        let value = self.required(key)?;
        value
            .as_u64()
            .ok_or_else(|| self.wrong(key, "an integer in 0..=18446744073709551615", value))
    }

    fn usize(&self, key: &str) -> Result<usize, String> {
        Ok(self.u64(key)? as usize)
    }

    /// May be omitted (then 0), but not `null`: the Rust field is not an `Option`.
    fn usize_or_zero(&self, key: &str) -> Result<usize, String> {
        match self.get(key) {
            None => Ok(0),
            Some(_) => self.usize(key),
        }
    }

    fn optional_usize(&self, key: &str) -> Result<Option<usize>, String> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value.as_u64().map(|v| Some(v as usize)).ok_or_else(|| {
                self.wrong(key, "null or an integer in 0..=18446744073709551615", value)
            }),
        }
    }

    fn optional_f64(&self, key: &str) -> Result<Option<f64>, String> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "null or a number", value)),
        }
    }

    fn handoff_id(&self, key: &str) -> Result<HandoffId, String> {
        let text = self.string(key)?;
        Uuid::parse_str(text)
            .map(HandoffId::new)
            .ok_or_else(|| format!("{key:?} in {} is not a UUID: {text:?}", self.what))
    }

    fn wrong(&self, key: &str, expected: &str, got: &Value) -> String {
        let got = match got {
            Value::Number(text) => format!("the number {text}"),
            other => other.kind().to_owned(),
        };
        format!("{key:?} in {} must be {expected}, got {got}", self.what)
    }
}

/// The single `{"Variant": payload}` member of an externally tagged enum value.
fn tagged<'a>(value: &'a Value, what: &str) -> Result<(&'a str, &'a Value), String> {
    match value {
        Value::Object(members) if members.len() == 1 => Ok((&members[0].0, &members[0].1)),
        _ => Err(format!(
            "{what} must be an object with exactly one variant key, got {}",
            value.kind()
        )),
    }
}

pub fn parse_line(value: &Value) -> Result<Line, String> {
    let Value::Object(members) = value else {
        return Err(format!("a trace line must be a JSON object, got {}", value.kind()));
    };
    // Read the addressing keys first; the op decides which other keys are allowed.
    let any = Fields {
        what: "the trace line",
        members,
    };
    let coordinator = any.string("coordinator")?.to_owned();
    let op_name = any.string("op")?;
    // Every op may carry its time, "at_ms".
    let allowed: &[&str] = match op_name {
        "new" => &[
            "coordinator",
            "op",
            "handoff_id",
            "order",
            "fallback_transfer_delay_ms",
            "revision",
            "at_ms",
        ],
        "start" => &["coordinator", "op", "at_ms"],
        "fact" => &["coordinator", "op", "fact", "at_ms"],
        "outcome" => &["coordinator", "op", "action_id", "outcome", "at_ms"],
        other => {
            return Err(format!(
                "unknown op {other:?} (expected \"new\", \"start\", \"fact\" or \"outcome\")"
            ));
        }
    };
    let fields = Fields::new(value, "the trace line", allowed)?;
    let op = match op_name {
        "new" => {
            let handoff_id = fields.handoff_id("handoff_id")?;
            let order = match fields.string("order")? {
                "SourceFirst" => Order::SourceFirst,
                "DestinationFirst" => Order::DestinationFirst,
                other => {
                    return Err(format!(
                        "unknown order {other:?} (expected \"SourceFirst\" or \"DestinationFirst\")"
                    ));
                }
            };
            let fallback_transfer_delay_ms = match fields.get("fallback_transfer_delay_ms") {
                None => 0.0,
                Some(value) => value.as_f64().ok_or_else(|| {
                    fields.wrong("fallback_transfer_delay_ms", "a number", value)
                })?,
            };
            let revision = match fields.get("revision") {
                None => None,
                Some(_) => Some(fields.string("revision")?.to_owned()),
            };
            Op::New {
                handoff_id,
                order,
                fallback_transfer_delay_ms,
                revision,
            }
        }
        "start" => Op::Start,
        "fact" => Op::Fact(parse_fact(fields.required("fact")?)?),
        "outcome" => Op::Outcome {
            action_id: fields.u64("action_id")?,
            outcome: parse_outcome(fields.required("outcome")?)?,
        },
        _ => unreachable!(),
    };
    let at_ms = fields.get("at_ms").map(|value| {
        value
            .as_f64()
            .ok_or_else(|| fields.wrong("at_ms", "a number", value))
    });
    Ok(Line {
        coordinator,
        op,
        at_ms,
    })
}

fn parse_fact(value: &Value) -> Result<Fact, String> {
    let (variant, payload) = tagged(value, "a fact")?;
    let only_id = |name: &str| -> Result<HandoffId, String> {
        let what = format!("fact {name}");
        Fields::new(payload, &what, &["handoff_id"])?.handoff_id("handoff_id")
    };
    Ok(match variant {
        "SourceHeld" => {
            let fields = Fields::new(
                payload,
                "fact SourceHeld",
                &["handoff_id", "transfer_timing"],
            )?;
            Fact::SourceHeld {
                handoff_id: fields.handoff_id("handoff_id")?,
                transfer_timing: parse_timing(fields.required("transfer_timing")?)?,
            }
        }
        "DestinationReserved" => {
            let fields = Fields::new(
                payload,
                "fact DestinationReserved",
                &["handoff_id", "transferable_prompt_tokens"],
            )?;
            Fact::DestinationReserved {
                handoff_id: fields.handoff_id("handoff_id")?,
                transferable_prompt_tokens: fields.usize("transferable_prompt_tokens")?,
            }
        }
        "TransferCompleted" => Fact::TransferCompleted {
            handoff_id: only_id(variant)?,
        },
        "Failed" => Fact::Failed {
            handoff_id: only_id(variant)?,
        },
        "TimedOut" => Fact::TimedOut {
            handoff_id: only_id(variant)?,
        },
        "Canceled" => Fact::Canceled {
            handoff_id: only_id(variant)?,
        },
        other => return Err(format!("unknown fact variant {other:?}")),
    })
}

fn parse_timing(value: &Value) -> Result<HandoffTransferTiming, String> {
    let fields = Fields::new(
        value,
        "transfer_timing",
        &[
            "mode",
            "full_prompt_tokens",
            "kv_bytes_per_token",
            "bandwidth_gb_s",
            "state_bytes",
        ],
    )?;
    let mode = match fields.string("mode")? {
        "full_prompt" => TransferTimingMode::FullPrompt,
        "destination_missing" => TransferTimingMode::DestinationMissing,
        other => {
            return Err(format!(
                "unknown transfer timing mode {other:?} (expected \"full_prompt\" or \"destination_missing\")"
            ));
        }
    };
    Ok(HandoffTransferTiming {
        mode,
        full_prompt_tokens: fields.usize("full_prompt_tokens")?,
        kv_bytes_per_token: fields.optional_usize("kv_bytes_per_token")?,
        bandwidth_gb_s: fields.optional_f64("bandwidth_gb_s")?,
        state_bytes: fields.usize_or_zero("state_bytes")?,
    })
}

fn parse_outcome(value: &Value) -> Result<Outcome, String> {
    match value {
        Value::String(name) => match name.as_str() {
            "Submitted" => Ok(Outcome::Submitted),
            "Accepted" => Ok(Outcome::Accepted),
            "Scheduled" => Ok(Outcome::Scheduled),
            "Applied" => Ok(Outcome::Applied),
            "Noop" => Ok(Outcome::Noop),
            "Failed" => Err("outcome \"Failed\" needs a reason: {\"Failed\": \"<reason>\"}".into()),
            other => Err(format!("unknown outcome {other:?}")),
        },
        Value::Object(_) => match tagged(value, "an outcome")? {
            ("Failed", Value::String(reason)) => Ok(Outcome::Failed(reason.clone())),
            ("Failed", other) => Err(format!(
                "the reason of outcome Failed must be a string, got {}",
                other.kind()
            )),
            (other, _) => Err(format!(
                "unknown outcome variant {other:?} (only \"Failed\" carries data)"
            )),
        },
        other => Err(format!(
            "an outcome must be a string or {{\"Failed\": \"<reason>\"}}, got {}",
            other.kind()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    const ID: &str = "00000000-0000-0000-0000-000000000001";

    fn line(text: &str) -> Result<Line, String> {
        parse_line(&parse(text).unwrap())
    }

    #[test]
    fn good_lines() {
        let l = line(&format!(
            r#"{{"coordinator": "c", "op": "new", "handoff_id": "{ID}", "order": "DestinationFirst"}}"#
        ))
        .unwrap();
        assert_eq!(
            l.op,
            Op::New {
                handoff_id: HandoffId::new(Uuid::from_u128(1)),
                order: Order::DestinationFirst,
                fallback_transfer_delay_ms: 0.0,
                revision: None,
            }
        );
        let l = line(&format!(
            r#"{{"coordinator": "c", "op": "new", "handoff_id": "{ID}", "order": "SourceFirst", "revision": "no such revision"}}"#
        ))
        .unwrap();
        let Op::New { revision, .. } = l.op else { panic!() };
        assert_eq!(revision.as_deref(), Some("no such revision"));
        let l = line(&format!(
            r#"{{"op": "fact", "coordinator": "c", "fact": {{"SourceHeld": {{"handoff_id": "{}", "transfer_timing": {{"mode": "destination_missing", "full_prompt_tokens": 10, "bandwidth_gb_s": NaN}}}}}}}}"#,
            "00000000000000000000000000000001"
        ))
        .unwrap();
        let Op::Fact(Fact::SourceHeld { transfer_timing, .. }) = l.op else { panic!() };
        assert!(transfer_timing.bandwidth_gb_s.unwrap().is_nan());
        assert_eq!(transfer_timing.kv_bytes_per_token, None);
        assert_eq!(transfer_timing.state_bytes, 0);
        let l = line(&format!(
            r#"{{"op": "fact", "coordinator": "c", "fact": {{"SourceHeld": {{"handoff_id": "{ID}", "transfer_timing": {{"mode": "full_prompt", "full_prompt_tokens": 1, "state_bytes": 18446744073709551615}}}}}}}}"#
        ))
        .unwrap();
        let Op::Fact(Fact::SourceHeld { transfer_timing, .. }) = l.op else { panic!() };
        assert_eq!(transfer_timing.state_bytes, usize::MAX);
        let l = line(r#"{"coordinator": "c", "op": "outcome", "action_id": 18446744073709551615, "outcome": {"Failed": "x"}}"#).unwrap();
        assert_eq!(l.op, Op::Outcome { action_id: u64::MAX, outcome: Outcome::Failed("x".into()) });
    }

    #[test]
    fn bad_lines() {
        for bad in [
            r#"[]"#,
            r#"{"op": "start"}"#,
            r#"{"coordinator": 1, "op": "start"}"#,
            r#"{"coordinator": "c", "op": "stop"}"#,
            r#"{"coordinator": "c", "op": "start", "x": 1}"#,
            r#"{"coordinator": "c", "op": "outcome", "action_id": -1, "outcome": "Noop"}"#,
            r#"{"coordinator": "c", "op": "outcome", "action_id": 1.0, "outcome": "Noop"}"#,
            r#"{"coordinator": "c", "op": "outcome", "action_id": true, "outcome": "Noop"}"#,
            r#"{"coordinator": "c", "op": "outcome", "action_id": "3", "outcome": "Noop"}"#,
            r#"{"coordinator": "c", "op": "outcome", "action_id": 3, "outcome": "Failed"}"#,
            r#"{"coordinator": "c", "op": "outcome", "action_id": 3, "outcome": {"Noop": null}}"#,
            r#"{"coordinator": "c", "op": "outcome", "action_id": 3, "outcome": {"Failed": 1}}"#,
            r#"{"coordinator": "c", "op": "outcome", "action_id": 3}"#,
            r#"{"coordinator": "c", "op": "fact", "fact": {"Failed": {}}}"#,
            r#"{"coordinator": "c", "op": "fact", "fact": "Failed"}"#,
            r#"{"coordinator": "c", "op": "fact", "fact": {"Bogus": {"handoff_id": "00000000000000000000000000000001"}}}"#,
            r#"{"coordinator": "c", "op": "new", "handoff_id": "x", "order": "SourceFirst"}"#,
            r#"{"coordinator": "c", "op": "new", "handoff_id": "00000000000000000000000000000001", "order": "sourcefirst"}"#,
            r#"{"coordinator": "c", "op": "new", "handoff_id": "00000000000000000000000000000001", "order": "SourceFirst", "fallback_transfer_delay_ms": null}"#,
            r#"{"coordinator": "c", "op": "new", "handoff_id": "00000000000000000000000000000001", "order": "SourceFirst", "revision": null}"#,
            r#"{"coordinator": "c", "op": "new", "handoff_id": "00000000000000000000000000000001", "order": "SourceFirst", "revision": 9}"#,
            r#"{"coordinator": "c", "op": "start", "revision": "seed"}"#,
            r#"{"coordinator": "c", "op": "fact", "fact": {"SourceHeld": {"handoff_id": "00000000000000000000000000000001", "transfer_timing": {"mode": "full_prompt", "full_prompt_tokens": 1, "state_bytes": null}}}}"#,
            r#"{"coordinator": "c", "op": "fact", "fact": {"SourceHeld": {"handoff_id": "00000000000000000000000000000001", "transfer_timing": {"mode": "full_prompt", "full_prompt_tokens": 1, "state_bytes": -1}}}}"#,
            r#"{"coordinator": "c", "op": "fact", "fact": {"SourceHeld": {"handoff_id": "00000000000000000000000000000001", "transfer_timing": {"mode": "full_prompt", "full_prompt_tokens": 1, "state_bytes": 1.5}}}}"#,
        ] {
            assert!(line(bad).is_err(), "{bad}");
        }
    }
}
