//! `handoff-oracle`: replays a trace (docs/ARCHITECTURE.md §7; JSON lines on stdin)
//! through the vendored Rust reference `HandoffCoordinatorCore` and writes one JSON
//! reply per input line to stdout.
//!
//! Rule kept here: the harness owns I/O, the coordinator table and the
//! trace-level errors (`invalid_input`, `duplicate_coordinator`,
//! `unknown_coordinator`, `invalid_fallback`); every handoff decision comes
//! from the reference code. An error message the oracle cannot map to a code
//! aborts the run (exit status 3) instead of guessing.
//!
//! Usage: `handoff-oracle [--raw | --improved] < trace.jsonl > replies.jsonl`
//!        `handoff-oracle --dump-improved-source`

mod engine;
mod json;
mod trace;
mod variant;

/// The vendored reference, compiled exactly as written (`--raw`).
#[allow(dead_code, unused_imports)]
#[path = "../reference/replay_handoff.rs"]
pub mod replay_handoff;

// `pub mod replay_handoff_improved;`: the reference patched by build.rs (default).
include!(concat!(env!("OUT_DIR"), "/improved_mod.rs"));

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::process::ExitCode;

use trace::{Line, Op};
use variant::{Core, Issued, error_code};

const IMPROVED_SOURCE: &str =
    include_str!(concat!(env!("OUT_DIR"), "/replay_handoff_improved.rs"));

const USAGE: &str = "\
usage: handoff-oracle [--raw | --improved] < TRACE.jsonl > REPLIES.jsonl
       handoff-oracle --dump-improved-source

Replays a handoff trace (docs/ARCHITECTURE.md §7) through the Rust reference coordinator.
  --improved   (default) the reference with the docs/ARCHITECTURE.md §6 improvements
  --raw        the reference exactly as written (release build: no debug_assert!)
  --dump-improved-source  print the patched reference the improved variant runs
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut raw = false;
    for arg in &args {
        match arg.as_str() {
            "--raw" => raw = true,
            "--improved" => raw = false,
            "--dump-improved-source" => {
                print!("{IMPROVED_SOURCE}");
                return ExitCode::SUCCESS;
            }
            "-h" | "--help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprint!("handoff-oracle: unknown argument {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    if raw && cfg!(debug_assertions) {
        eprintln!(
            "handoff-oracle: warning: debug build; the reference's debug_assert!s are live \
             (build with --release for the reference's release behaviour)"
        );
    }
    let result = if raw {
        run::<replay_handoff::HandoffCoordinatorCore>()
    } else {
        run::<replay_handoff_improved::HandoffCoordinatorCore>()
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fatal::Io(err)) => {
            eprintln!("handoff-oracle: I/O error: {err}");
            ExitCode::from(1)
        }
        Err(Fatal::UnmappedError { line, message }) => {
            eprintln!(
                "handoff-oracle: FATAL: line {line}: the reference returned an error the oracle \
                 cannot map to a code: {message:?}\n(update variant::error_code)"
            );
            ExitCode::from(3)
        }
    }
}

enum Fatal {
    Io(io::Error),
    UnmappedError { line: u64, message: String },
}

impl From<io::Error> for Fatal {
    fn from(err: io::Error) -> Self {
        Fatal::Io(err)
    }
}

fn run<C: Core>() -> Result<(), Fatal> {
    C::self_check();
    let mut reader = BufReader::with_capacity(1 << 16, io::stdin().lock());
    let mut writer = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut replay = Replay::<C>::default();
    let mut buf = Vec::new();
    let mut out = String::new();
    let mut line_no = 0u64;
    let result = loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break Ok(());
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        line_no += 1;
        out.clear();
        if let Err(fatal) = replay.line(&buf, line_no, &mut out) {
            break Err(fatal);
        }
        out.push('\n');
        writer.write_all(out.as_bytes())?;
    };
    // Replies written so far reach stdout even when the run aborts.
    writer.flush()?;
    result
}

struct Replay<C> {
    coordinators: HashMap<String, C>,
}

impl<C> Default for Replay<C> {
    fn default() -> Self {
        Self {
            coordinators: HashMap::new(),
        }
    }
}

impl<C: Core> Replay<C> {
    /// Apply one input line and write its reply (without the newline) to `out`.
    fn line(&mut self, bytes: &[u8], line_no: u64, out: &mut String) -> Result<(), Fatal> {
        let invalid = |coordinator: Option<&str>, detail: &str, out: &mut String| {
            let message = format!("line {line_no}: {detail}");
            self.error_reply(out, coordinator, "invalid_input", &message);
        };
        let Ok(text) = std::str::from_utf8(bytes) else {
            invalid(None, "not valid UTF-8", out);
            return Ok(());
        };
        if text.trim_matches([' ', '\t', '\r', '\n']).is_empty() {
            invalid(None, "blank line (expected one JSON object)", out);
            return Ok(());
        }
        let value = match json::parse(text) {
            Ok(value) => value,
            Err(detail) => {
                invalid(None, &detail, out);
                return Ok(());
            }
        };
        let Line { coordinator, op } = match trace::parse_line(&value) {
            Ok(line) => line,
            Err(detail) => {
                invalid(trace::coordinator_hint(&value), &detail, out);
                return Ok(());
            }
        };
        drop(value);

        let reply = match op {
            Op::New {
                handoff_id,
                order,
                fallback_transfer_delay_ms: fallback,
            } => {
                if self.coordinators.contains_key(&coordinator) {
                    let message =
                        format!("line {line_no}: coordinator {coordinator:?} already exists");
                    self.error_reply(out, Some(&coordinator), "duplicate_coordinator", &message);
                    return Ok(());
                }
                if C::REJECTS_INVALID_FALLBACK && !(fallback.is_finite() && fallback >= 0.0) {
                    let message = format!(
                        "line {line_no}: invalid fallback transfer delay {fallback} \
                         (must be finite and >= 0)"
                    );
                    self.error_reply(out, Some(&coordinator), "invalid_fallback", &message);
                    return Ok(());
                }
                let core = C::create(handoff_id, order, fallback);
                self.coordinators.insert(coordinator.clone(), core);
                Ok(Vec::new())
            }
            Op::Start | Op::Fact(_) | Op::Outcome { .. } => {
                let Some(core) = self.coordinators.get_mut(&coordinator) else {
                    let message = format!("line {line_no}: unknown coordinator {coordinator:?}");
                    self.error_reply(out, Some(&coordinator), "unknown_coordinator", &message);
                    return Ok(());
                };
                match &op {
                    Op::Start => core.start(),
                    Op::Fact(fact) => core.fact(fact),
                    Op::Outcome {
                        action_id,
                        outcome,
                    } => core.outcome(*action_id, outcome),
                    Op::New { .. } => unreachable!(),
                }
            }
        };
        match reply {
            Ok(actions) => self.actions_reply(out, &coordinator, &actions),
            Err(err) => {
                let message = err.to_string();
                let Some(code) = error_code(&message) else {
                    return Err(Fatal::UnmappedError {
                        line: line_no,
                        message,
                    });
                };
                self.error_reply(out, Some(&coordinator), code, &message);
            }
        }
        Ok(())
    }

    fn actions_reply(&self, out: &mut String, coordinator: &str, actions: &[Issued]) {
        out.push_str("{\"coordinator\": ");
        json::write_str(out, coordinator);
        out.push_str(", \"actions\": [");
        for (i, issued) in actions.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(
                out,
                "{{\"id\": {}, \"action\": {{\"{}\": {{\"handoff_id\": \"{}\"",
                issued.id,
                issued.kind,
                issued.handoff_id.get()
            );
            if let Some(delay_ms) = issued.delay_ms {
                out.push_str(", \"delay_ms\": ");
                json::write_f64(out, delay_ms);
            }
            out.push_str("}}}");
        }
        out.push(']');
        self.status(out, Some(coordinator));
    }

    fn error_reply(&self, out: &mut String, coordinator: Option<&str>, code: &str, message: &str) {
        out.push_str("{\"coordinator\": ");
        match coordinator {
            Some(name) => json::write_str(out, name),
            None => out.push_str("null"),
        }
        out.push_str(", \"error\": {\"code\": ");
        json::write_str(out, code);
        out.push_str(", \"message\": ");
        json::write_str(out, message);
        out.push('}');
        self.status(out, coordinator);
    }

    /// `, "complete": ..., "completion": ...}` for the addressed coordinator
    /// after the op (false/null when there is no such coordinator).
    fn status(&self, out: &mut String, coordinator: Option<&str>) {
        let core = coordinator.and_then(|name| self.coordinators.get(name));
        let complete = core.is_some_and(|c| c.is_complete());
        let completion = core.and_then(|c| c.completion());
        out.push_str(if complete {
            ", \"complete\": true, \"completion\": "
        } else {
            ", \"complete\": false, \"completion\": "
        });
        match completion {
            Some(name) => {
                out.push('"');
                out.push_str(name);
                out.push_str("\"}");
            }
            None => out.push_str("null}"),
        }
    }
}
