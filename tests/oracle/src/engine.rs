//! `crate::engine`: the few engine types the vendored reference imports.
//!
//! Rule kept here: `HandoffTransferTiming::delay_ms` is the exact f64
//! expression the reference's engine uses (`tokens * kv / (bandwidth * 1e9) *
//! 1000`, in that order), so delays are bit-identical. The newer upstream
//! timing model's `state_bytes` (docs/coordinator.md; every revision accepts it)
//! adds a fixed payload: `(tokens * kv + state_bytes) / (bandwidth * 1e9) *
//! 1000`, the sum taken in f64 and skipped when `state_bytes` is 0, so a
//! timing without it keeps the reference's bits exactly.

#![allow(dead_code)]

use uuid::Uuid;

#[derive(Clone, Copy, Debug, Eq, Hash, PartialEq)]
pub enum Backend {
    Vllm,
    Sglang,
    Trtllm,
}

#[derive(Clone, Copy, Debug, Eq, Hash, PartialEq)]
pub enum TransferTimingMode {
    FullPrompt,
    DestinationMissing,
}

/// Identity of one handoff (a UUID, i.e. a 128-bit value).
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub struct HandoffId(Uuid);

impl HandoffId {
    pub fn new(uuid: Uuid) -> Self {
        Self(uuid)
    }

    pub fn get(self) -> Uuid {
        self.0
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandoffTransferTiming {
    pub mode: TransferTimingMode,
    pub full_prompt_tokens: usize,
    pub kv_bytes_per_token: Option<usize>,
    pub bandwidth_gb_s: Option<f64>,
    /// Bytes moved whatever the token count (0 in the seed's model).
    pub state_bytes: usize,
}

impl HandoffTransferTiming {
    /// Virtual transfer delay, or `None` when the timing model is incomplete (no
    /// bandwidth, or neither per-token nor state bytes) or the bandwidth is
    /// `<= 0.0` (NaN is not `<= 0.0`: it yields `Some(NaN)`).
    pub fn delay_ms(&self, destination_missing_tokens: usize) -> Option<f64> {
        let tokens = match self.mode {
            TransferTimingMode::FullPrompt => self.full_prompt_tokens,
            TransferTimingMode::DestinationMissing => destination_missing_tokens,
        };
        if self.kv_bytes_per_token.is_none() && self.state_bytes == 0 {
            return None;
        }
        let bandwidth_gb_s = self.bandwidth_gb_s?;
        if bandwidth_gb_s <= 0.0 {
            return None;
        }
        let mut payload = tokens as f64 * self.kv_bytes_per_token.unwrap_or(0) as f64;
        if self.state_bytes != 0 {
            payload += self.state_bytes as f64;
        }
        Some(payload / (bandwidth_gb_s * 1e9) * 1000.0)
    }

    /// The delay for moving the whole prompt, whatever `mode` says.
    pub fn full_prompt_delay_ms(&self) -> Option<f64> {
        Self {
            mode: TransferTimingMode::FullPrompt,
            ..*self
        }
        .delay_ms(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_formula() {
        let t = HandoffTransferTiming {
            mode: TransferTimingMode::FullPrompt,
            full_prompt_tokens: 10,
            kv_bytes_per_token: Some(1024),
            bandwidth_gb_s: Some(1.0),
            state_bytes: 0,
        };
        assert_eq!(t.delay_ms(99), Some(10.0 * 1024.0 / (1.0 * 1e9) * 1000.0));
        let d = HandoffTransferTiming {
            mode: TransferTimingMode::DestinationMissing,
            ..t
        };
        assert_eq!(d.delay_ms(3), Some(3.0 * 1024.0 / 1e9 * 1000.0));
        assert_eq!(d.full_prompt_delay_ms(), t.delay_ms(0));
        assert_eq!(HandoffTransferTiming { bandwidth_gb_s: Some(0.0), ..t }.delay_ms(1), None);
        assert_eq!(HandoffTransferTiming { bandwidth_gb_s: Some(-0.0), ..t }.delay_ms(1), None);
        assert_eq!(HandoffTransferTiming { bandwidth_gb_s: None, ..t }.delay_ms(1), None);
        assert_eq!(HandoffTransferTiming { kv_bytes_per_token: None, ..t }.delay_ms(1), None);
        assert!(HandoffTransferTiming { bandwidth_gb_s: Some(f64::NAN), ..t }
            .delay_ms(1)
            .unwrap()
            .is_nan());
    }

    #[test]
    fn state_bytes_add_a_fixed_payload() {
        let t = HandoffTransferTiming {
            mode: TransferTimingMode::DestinationMissing,
            full_prompt_tokens: 10,
            kv_bytes_per_token: Some(1024),
            bandwidth_gb_s: Some(2.5),
            state_bytes: 4096,
        };
        assert_eq!(t.delay_ms(3), Some((3.0 * 1024.0 + 4096.0) / (2.5 * 1e9) * 1000.0));
        assert_eq!(t.full_prompt_delay_ms(), Some((10.0 * 1024.0 + 4096.0) / 2.5e9 * 1000.0));
        // Without per-token bytes the state alone is a complete model.
        let state_only = HandoffTransferTiming { kv_bytes_per_token: None, ..t };
        assert_eq!(state_only.delay_ms(3), Some(4096.0 / 2.5e9 * 1000.0));
        assert_eq!(HandoffTransferTiming { state_bytes: 0, ..state_only }.delay_ms(3), None);
        assert_eq!(HandoffTransferTiming { bandwidth_gb_s: None, ..t }.delay_ms(3), None);
        assert_eq!(HandoffTransferTiming { bandwidth_gb_s: Some(0.0), ..t }.delay_ms(3), None);
        // A payload beyond f64's range still divides to a finite or infinite delay, never NaN.
        let huge = HandoffTransferTiming { bandwidth_gb_s: Some(1e-300), ..t };
        assert_eq!(huge.delay_ms(usize::MAX), Some(f64::INFINITY));
    }
}
