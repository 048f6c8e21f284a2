//! Derives every coordinator variant the oracle runs from the vendored reference
//! by exact string replacements, each of which must match exactly once in the
//! text it patches, and fails the build loudly otherwise. The vendored file
//! itself is never edited: `reference/replay_handoff.rs` stays byte-identical
//! to the seed.
//!
//! The variants form a chain, each one the previous plus its patches:
//! - `raw`: the reference as written. Its only patches are inside its own
//!   `#[cfg(test)] mod tests` (two struct literals gain `state_bytes: 0`,
//!   because the shim's `HandoffTransferTiming` carries the newer timing
//!   model's field); the build checks that no patch touches code outside it.
//! - `improved`: + docs/architecture.md §6.1 and §6.2 (the `seed` revision).
//! - `a976b2bf`: + what upstream a976b2bf changed in the coordinator (docs/revisions.md): the reopened cleanup after a success and the
//!   scheduled-delay check. Its outcome journalling and `start()` changes are
//!   what §6.1 and §6.2 already do; its TRT-LLM change is conformance, not
//!   coordinator code; `state_bytes` lives in `src/engine.rs`.
//!
//! Improvement docs/architecture.md §6.3 (reject an invalid fallback at construction) cannot be a
//! patch without changing `new_with_fallback`'s signature, so it lives in the
//! harness (`src/variant.rs`), for every variant but `raw`.
//!
//! Outputs in OUT_DIR, for each variant NAME:
//! - `replay_handoff_NAME.rs`: the patched copy of the reference;
//! - `NAME_mod.rs`: `#[path = "<abs>"] pub mod replay_handoff_NAME;` so the
//!   patched file is compiled as a real module file (inner `//!` docs and its
//!   `#[cfg(test)] mod tests` work, which `include!` would not allow).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

const REFERENCE: &str = "reference/replay_handoff.rs";

/// Where the reference's own unit tests start: `raw` may only patch after it.
const TESTS_START: &str = "#[cfg(test)]\nmod tests {\n";

/// One checked replacement: what it is, the exact old text, the exact new text.
struct Patch {
    what: &'static str,
    old: &'static str,
    new: &'static str,
}

struct Variant {
    name: &'static str,
    /// What the generated file's header says it is.
    describes: &'static str,
    /// Applied, in order, to the previous variant's text (the reference for the first).
    patches: &'static [Patch],
}

const VARIANTS: &[Variant] = &[
    Variant {
        name: "raw",
        describes: "the reference as written; only its unit tests adapted to the timing's state_bytes field",
        patches: RAW_TEST_PATCHES,
    },
    Variant {
        name: "improved",
        describes: "revision seed: the reference with the docs/architecture.md §6 improvements",
        patches: IMPROVED_PATCHES,
    },
    Variant {
        name: "a976b2bf",
        describes: "revision a976b2bf: the improved reference plus the reopened cleanup and the scheduled-delay check",
        patches: A976B2BF_PATCHES,
    },
];

const RAW_TEST_PATCHES: &[Patch] = &[
    Patch {
        what: "test-only: the fallback test's timing literal names state_bytes",
        old: "            kv_bytes_per_token: None,
            bandwidth_gb_s: None,
        };
",
        new: "            kv_bytes_per_token: None,
            bandwidth_gb_s: None,
            state_bytes: 0,
        };
",
    },
    Patch {
        what: "test-only: the negative-bandwidth test's timing literal names state_bytes",
        old: "            bandwidth_gb_s: Some(-1.0),
        };
",
        new: "            bandwidth_gb_s: Some(-1.0),
            state_bytes: 0,
        };
",
    },
];

const IMPROVED_PATCHES: &[Patch] = &[
    Patch {
        what: "§6.1a: a Failed(_) outcome is recorded only after it was accepted \
               (a failed CancelSource/CancelDestination bails without recording)",
        old: "        self.actions.outcomes.insert(action_id, outcome.clone());

        if let HandoffActionOutcome::Failed(_) = outcome {
            if matches!(
                action,
                HandoffAction::CancelSource { .. } | HandoffAction::CancelDestination { .. }
            ) {
                bail!(\"handoff cleanup action {action_id:?} failed\");
            }
            return self.begin_cleanup();
        }
",
        new: "        if let HandoffActionOutcome::Failed(_) = outcome {
            if matches!(
                action,
                HandoffAction::CancelSource { .. } | HandoffAction::CancelDestination { .. }
            ) {
                bail!(\"handoff cleanup action {action_id:?} failed\");
            }
            // oracle patch §6.1: record only once accepted.
            self.actions.outcomes.insert(action_id, outcome.clone());
            return self.begin_cleanup();
        }
",
    },
    Patch {
        what: "§6.1b: a non-failed outcome is recorded only after require_outcome accepted it",
        old: "            HandoffAction::Complete { .. } => return Ok(Vec::new()),
        }

        match self.mode {
",
        new: "            HandoffAction::Complete { .. } => return Ok(Vec::new()),
        }
        // oracle patch §6.1: record only once require_outcome accepted it.
        self.actions.outcomes.insert(action_id, outcome);

        match self.mode {
",
    },
    Patch {
        what: "§6.2: start() on a completed coordinator issues nothing and changes nothing",
        old: "    pub fn start(&mut self) -> Result<Vec<IssuedHandoffAction>> {
        if self.actions.started {
            return Ok(Vec::new());
        }
",
        new: "    pub fn start(&mut self) -> Result<Vec<IssuedHandoffAction>> {
        // oracle patch §6.2: a completed coordinator issues nothing on start().
        if self.actions.started || self.mode == CoordinatorMode::Complete {
            return Ok(Vec::new());
        }
",
    },
];

const A976B2BF_PATCHES: &[Patch] = &[
    Patch {
        what: "a976b2bf reopened cleanup: a terminal fact after a Success completion reopens cleanup",
        old: "        self.validate_handoff(fact.handoff_id())?;
        if self.mode != CoordinatorMode::Active {
            return Ok(Vec::new());
        }
",
        new: "        self.validate_handoff(fact.handoff_id())?;
        // oracle patch a976b2bf, reopened cleanup: a terminal fact after a Success completion
        // reopens cleanup. complete() cleared the journal (earlier ids are now
        // unknown) but not the owners' progress: the source's cleanup is done
        // (ReleaseSource was acknowledged, which is what completed it) and the
        // destination's is not (no cancel is ever issued while Active), so the
        // reference's own cleanup step issues CancelDestination alone. In
        // CleaningUp is_complete() is false while `completion` still reads
        // Success; the acknowledged cancel completes again from CleaningUp, i.e.
        // as Canceled, after which this branch cannot fire again and every fact
        // is ignored. Ids keep counting (next_id is never reset).
        if self.mode == CoordinatorMode::Complete
            && self.completion == Some(HandoffCompletion::Success)
            && matches!(
                fact,
                HandoffFact::Failed { .. } | HandoffFact::TimedOut { .. } | HandoffFact::Canceled { .. }
            )
        {
            self.mode = CoordinatorMode::CleaningUp;
            let actions = self.advance_cleanup()?;
            assert!(
                matches!(
                    actions.as_slice(),
                    [IssuedHandoffAction { action: HandoffAction::CancelDestination { .. }, .. }]
                ),
                \"oracle patch a976b2bf: a reopened cleanup must issue CancelDestination alone, got {actions:?}\"
            );
            return Ok(actions);
        }
        if self.mode != CoordinatorMode::Active {
            return Ok(Vec::new());
        }
",
    },
    Patch {
        what: "a976b2bf scheduled delay (a): SourceHeld that would schedule the transfer checks its delay before latching",
        old: "                validate_transfer_timing(transfer_timing)?;
                self.source.held = true;
",
        new: "                validate_transfer_timing(transfer_timing)?;
                // oracle patch a976b2bf, scheduled delay: the destination is reserved, so this fact
                // schedules the transfer; reject it before anything is latched.
                if self.destination.reserved {
                    let transferable_prompt_tokens = self
                        .destination
                        .transferable_prompt_tokens
                        .expect(\"reserved destination must report its transferable footprint\");
                    validate_transfer_delay_ms(Some(
                        self.scheduled_delay_ms(transfer_timing, transferable_prompt_tokens),
                    ))?;
                }
                self.source.held = true;
",
    },
    Patch {
        what: "a976b2bf scheduled delay (b): DestinationReserved that would schedule the transfer checks its delay before latching",
        old: "                    bail!(\"destination reserved before ownership was accepted\");
                }
                self.destination.reserved = true;
",
        new: "                    bail!(\"destination reserved before ownership was accepted\");
                }
                // oracle patch a976b2bf, scheduled delay: the source is held, so this fact schedules
                // the transfer; reject it before anything is latched.
                if self.source.held {
                    let transfer_timing = self
                        .source
                        .transfer_timing
                        .expect(\"held source must retain transfer timing\");
                    validate_transfer_delay_ms(Some(
                        self.scheduled_delay_ms(transfer_timing, transferable_prompt_tokens),
                    ))?;
                }
                self.destination.reserved = true;
",
    },
    Patch {
        what: "a976b2bf scheduled delay (c): StartTransfer carries the delay computed by the function that was validated",
        old: "                    delay_ms: transfer_timing
                        .delay_ms(transferable_prompt_tokens)
                        .unwrap_or(self.fallback_transfer_delay_ms),
",
        new: "                    // oracle patch a976b2bf, scheduled delay: the validated computation.
                    delay_ms: self.scheduled_delay_ms(transfer_timing, transferable_prompt_tokens),
",
    },
    Patch {
        what: "a976b2bf scheduled delay (d): one function computes the delay StartTransfer carries (after the fallback)",
        old: "    fn validate_handoff(&self, handoff_id: HandoffId) -> Result<()> {
",
        new: "    /// oracle patch a976b2bf, scheduled delay: the delay StartTransfer carries, fallback applied.
    fn scheduled_delay_ms(
        &self,
        transfer_timing: HandoffTransferTiming,
        transferable_prompt_tokens: usize,
    ) -> f64 {
        transfer_timing
            .delay_ms(transferable_prompt_tokens)
            .unwrap_or(self.fallback_transfer_delay_ms)
    }

    fn validate_handoff(&self, handoff_id: HandoffId) -> Result<()> {
",
    },
];

fn apply(variant: &Variant, text: &str) -> String {
    let mut patched = text.to_owned();
    for Patch { what, old, new } in variant.patches {
        let count = patched.matches(old).count();
        if count != 1 {
            panic!(
                "\n\nhandoff-oracle build: {} patch `{what}` must match exactly once, \
                 but matched {count} times.\nThe vendored reference (or an earlier patch) \
                 changed; update build.rs.\nExpected text:\n{old}\n",
                variant.name
            );
        }
        patched = patched.replacen(old, new, 1);
    }
    assert_ne!(
        patched, text,
        "handoff-oracle build: {} patches changed nothing",
        variant.name
    );
    patched
}

/// `raw` must keep every line of the reference outside its unit tests.
fn check_raw_only_touches_tests(reference: &str, raw: &str) {
    let code_end = reference
        .find(TESTS_START)
        .unwrap_or_else(|| panic!("handoff-oracle build: {REFERENCE} has no `{TESTS_START}`"));
    for Patch { what, old, .. } in RAW_TEST_PATCHES {
        let at = reference.find(old).expect("checked by apply");
        assert!(
            at > code_end,
            "handoff-oracle build: raw patch `{what}` touches code outside the reference's tests"
        );
    }
    assert_eq!(
        raw[..code_end],
        reference[..code_end],
        "handoff-oracle build: raw differs from the reference outside its tests"
    );
}

fn write_module(out_dir: &Path, variant: &Variant, text: &str) {
    let header = format!(
        "// GENERATED by tests/oracle/build.rs from {REFERENCE} ({}). Do not edit.\n",
        variant.describes
    );
    let source_path = out_dir.join(format!("replay_handoff_{}.rs", variant.name));
    fs::write(&source_path, format!("{header}{text}")).unwrap();
    let path_literal = format!("{:?}", source_path.to_str().expect("OUT_DIR is not UTF-8"));
    fs::write(
        out_dir.join(format!("{}_mod.rs", variant.name)),
        format!(
            "#[allow(dead_code, unused_imports)]\n#[path = {path_literal}]\npub mod replay_handoff_{};\n",
            variant.name
        ),
    )
    .unwrap();
}

fn main() {
    println!("cargo:rerun-if-changed={REFERENCE}");
    println!("cargo:rerun-if-changed=build.rs");

    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let reference_path = manifest_dir.join(REFERENCE);
    let reference = fs::read_to_string(&reference_path).unwrap_or_else(|err| {
        panic!(
            "handoff-oracle build: cannot read {}: {err}",
            reference_path.display()
        )
    });

    let mut text = reference.clone();
    for variant in VARIANTS {
        text = apply(variant, &text);
        if variant.name == "raw" {
            check_raw_only_touches_tests(&reference, &text);
        }
        write_module(&out_dir, variant, &text);
    }
}
