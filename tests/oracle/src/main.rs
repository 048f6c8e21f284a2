//! `handoff-oracle`: replays a trace (docs/architecture.md §7; JSON lines on stdin)
//! through the vendored Rust reference `HandoffCoordinatorCore` and writes one JSON
//! reply per input line to stdout.
//!
//! Rule kept here: the harness owns I/O, the coordinator table, the choice of
//! variant per coordinator (its `new` line's `"revision"`, else `--revision`)
//! the trace-level errors (`invalid_input`, `duplicate_coordinator`,
//! `unknown_coordinator`, `invalid_revision`, `invalid_fallback`) and the
//! file's clock (`at_ms`: `invalid_time`, `time_went_backwards`); every
//! handoff decision comes from the reference code. An error message the oracle
//! cannot map to a code aborts the run (exit status 3) instead of guessing.
//!
//! Usage: `handoff-oracle [--raw | --improved] [--revision seed|a976b2bf] < trace.jsonl`
//!        `handoff-oracle --dump-source raw|improved|a976b2bf`

mod engine;
mod json;
mod trace;
mod variant;

// `pub mod replay_handoff_NAME;` for each variant build.rs derives from the reference.
include!(concat!(env!("OUT_DIR"), "/raw_mod.rs"));
include!(concat!(env!("OUT_DIR"), "/improved_mod.rs"));
include!(concat!(env!("OUT_DIR"), "/a976b2bf_mod.rs"));

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::process::ExitCode;

use trace::{Line, Op};
use variant::{Coordinator, Issued, Revision, Variant, error_code};

const USAGE: &str = "\
usage: handoff-oracle [--raw | --improved] [--revision seed|a976b2bf] < TRACE.jsonl > REPLIES.jsonl
       handoff-oracle --dump-source raw|improved|a976b2bf

Replays a handoff trace (docs/architecture.md §7) through the Rust reference coordinator.
A `new` line may name its protocol revision (docs/revisions.md): \"revision\": \"seed\"
runs the improved reference, \"a976b2bf\" the reference patched to that revision.
  --improved   (default) run each coordinator's revision, with the docs/architecture.md §6
               improvements
  --raw        the reference exactly as written for every coordinator, whatever its
               revision (release build: no debug_assert!)
  --revision R the revision of a `new` line without one (default: seed)
  --dump-source V  print the (patched) reference a variant runs
  --dump-improved-source  same as --dump-source improved
";

/// What the command line asks for.
enum Command {
    Replay {
        raw: bool,
        default_revision: Revision,
    },
    DumpSource(Variant),
    Help,
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut args = args.into_iter();
    let mut raw = false;
    let mut default_revision = Revision::Seed;
    while let Some(arg) = args.next() {
        // `--flag value` or `--flag=value` for the flags that take one.
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        let takes_value = matches!(flag, "--revision" | "--dump-source");
        if inline.is_some() && !takes_value {
            return Err(format!("{flag} takes no value"));
        }
        let value = if takes_value {
            inline
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value"))?
        } else {
            String::new()
        };
        match flag {
            "--raw" => raw = true,
            "--improved" => raw = false,
            "--revision" => {
                default_revision =
                    Revision::parse(&value).ok_or_else(|| format!("unknown revision {value:?}"))?;
            }
            "--dump-source" => {
                let variant =
                    Variant::parse(&value).ok_or_else(|| format!("unknown variant {value:?}"))?;
                return Ok(Command::DumpSource(variant));
            }
            "--dump-improved-source" => return Ok(Command::DumpSource(Variant::Improved)),
            "-h" | "--help" => return Ok(Command::Help),
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    Ok(Command::Replay {
        raw,
        default_revision,
    })
}

fn main() -> ExitCode {
    let (raw, default_revision) = match parse_args(std::env::args().skip(1)) {
        Ok(Command::Replay {
            raw,
            default_revision,
        }) => (raw, default_revision),
        Ok(Command::DumpSource(variant)) => {
            print!("{}", variant.source());
            return ExitCode::SUCCESS;
        }
        Ok(Command::Help) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprint!("handoff-oracle: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if raw && cfg!(debug_assertions) {
        eprintln!(
            "handoff-oracle: warning: debug build; the reference's debug_assert!s are live \
             (build with --release for the reference's release behaviour)"
        );
    }
    let result = run(Replay::new(raw, default_revision));
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

fn run(mut replay: Replay) -> Result<(), Fatal> {
    for variant in Variant::ALL {
        variant.self_check();
    }
    let mut reader = BufReader::with_capacity(1 << 16, io::stdin().lock());
    let mut writer = BufWriter::with_capacity(1 << 16, io::stdout().lock());
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

struct Replay {
    coordinators: HashMap<String, Box<dyn Coordinator>>,
    /// The time of the last line whose `"at_ms"` was accepted (times never decrease).
    clock: Option<f64>,
    /// `--raw`: every coordinator runs the reference as written.
    raw: bool,
    /// The revision of a `new` line that names none.
    default_revision: Revision,
}

impl Replay {
    fn new(raw: bool, default_revision: Revision) -> Self {
        Self {
            coordinators: HashMap::new(),
            clock: None,
            raw,
            default_revision,
        }
    }

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
        let Line {
            coordinator,
            op,
            at_ms,
        } = match trace::parse_line(&value) {
            Ok(line) => line,
            Err(detail) => {
                invalid(trace::coordinator_hint(&value), &detail, out);
                return Ok(());
            }
        };
        drop(value);

        // A line's time is checked once the line is read (a `new` line's revision name
        // included), before any coordinator sees it; only an accepted time moves the clock.
        let revision = match &op {
            Op::New { revision, .. } => match revision.as_deref().map(Revision::parse) {
                None => Some(self.default_revision),
                Some(Some(revision)) => Some(revision),
                Some(None) => {
                    let message = format!(
                        "line {line_no}: unknown revision {:?} (expected one of {:?})",
                        revision.clone().unwrap_or_default(),
                        Revision::ALL.map(Revision::name),
                    );
                    self.error_reply(out, Some(&coordinator), "invalid_revision", &message);
                    return Ok(());
                }
            },
            _ => None,
        };
        if let Some(at_ms) = at_ms {
            let refused = match at_ms {
                Err(detail) => Some(("invalid_input", detail)),
                Ok(at) if !(at.is_finite() && at >= 0.0) => Some((
                    "invalid_time",
                    format!("at_ms must be finite and >= 0, got {at}"),
                )),
                Ok(at) if self.clock.is_some_and(|clock| at < clock) => Some((
                    "time_went_backwards",
                    format!("at_ms {at} is before {}", self.clock.unwrap_or_default()),
                )),
                Ok(at) => {
                    self.clock = Some(at);
                    None
                }
            };
            if let Some((code, detail)) = refused {
                let message = format!("line {line_no}: {detail}");
                self.error_reply(out, Some(&coordinator), code, &message);
                return Ok(());
            }
        }

        let reply = match op {
            Op::New {
                handoff_id,
                order,
                fallback_transfer_delay_ms: fallback,
                ..
            } => {
                // The revision was read with the line (like its order), so an unknown
                // name is reported before the coordinator table is consulted.
                let revision = revision.expect("read above for every new line");
                if self.coordinators.contains_key(&coordinator) {
                    let message =
                        format!("line {line_no}: coordinator {coordinator:?} already exists");
                    self.error_reply(out, Some(&coordinator), "duplicate_coordinator", &message);
                    return Ok(());
                }
                let variant = Variant::running(revision, self.raw);
                if variant.rejects_invalid_fallback() && !(fallback.is_finite() && fallback >= 0.0)
                {
                    let message = format!(
                        "line {line_no}: invalid fallback transfer delay {fallback} \
                         (must be finite and >= 0)"
                    );
                    self.error_reply(out, Some(&coordinator), "invalid_fallback", &message);
                    return Ok(());
                }
                let core = variant.create(handoff_id, order, fallback);
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
                    Op::Outcome { action_id, outcome } => core.outcome(*action_id, outcome),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command, String> {
        parse_args(args.iter().map(|arg| arg.to_string()))
    }

    fn replay_args(args: &[&str]) -> (bool, Revision) {
        match parse(args) {
            Ok(Command::Replay {
                raw,
                default_revision,
            }) => (raw, default_revision),
            _ => panic!("{args:?} should ask for a replay"),
        }
    }

    #[test]
    fn command_line() {
        assert_eq!(replay_args(&[]), (false, Revision::Seed));
        assert_eq!(replay_args(&["--raw"]), (true, Revision::Seed));
        assert_eq!(replay_args(&["--raw", "--improved"]), (false, Revision::Seed));
        assert_eq!(
            replay_args(&["--revision", "a976b2bf"]),
            (false, Revision::A976b2bf)
        );
        assert_eq!(
            replay_args(&["--revision=a976b2bf", "--raw", "--revision=seed"]),
            (true, Revision::Seed)
        );
        for (args, variant) in [
            (&["--dump-source", "raw"][..], Variant::Raw),
            (&["--dump-source=a976b2bf"][..], Variant::A976b2bf),
            (&["--dump-improved-source"][..], Variant::Improved),
        ] {
            assert!(matches!(parse(args), Ok(Command::DumpSource(v)) if v == variant));
        }
        assert!(matches!(parse(&["-h"]), Ok(Command::Help)));
        for bad in [
            &["--revision"][..],
            &["--revision", "A976B2BF"],
            &["--revision="],
            &["--raw=1"],
            &["--dump-source", "seed"],
            &["--bogus"],
            &["raw"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_variant_derives_from_the_reference() {
        let reference = include_str!("../reference/replay_handoff.rs");
        let code = |text: &'static str| text.split("#[cfg(test)]\nmod tests {").next().unwrap();
        // raw runs the reference's code as written (below a one-line GENERATED header);
        // the others carry their patch markers.
        let (header, raw) = Variant::Raw.source().split_once('\n').unwrap();
        assert!(header.starts_with("// GENERATED by tests/oracle/build.rs"));
        assert_eq!(code(raw), code(reference));
        assert!(Variant::Improved.source().contains("oracle patch §6.2"));
        assert!(!Variant::Improved.source().contains("a976b2bf"));
        let a976b2bf = Variant::A976b2bf.source();
        assert!(a976b2bf.contains("oracle patch §6.1") && a976b2bf.contains("oracle patch §6.2"));
        assert!(a976b2bf.contains("oracle patch a976b2bf, reopened cleanup"));
        assert!(a976b2bf.contains("oracle patch a976b2bf, scheduled delay"));
        for variant in Variant::ALL {
            variant.self_check();
        }
    }
}
