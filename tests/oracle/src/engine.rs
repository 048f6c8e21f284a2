//! `crate::engine`: the few engine types the vendored reference imports.
//!
//! Rule kept here: `HandoffTransferTiming::delay_ms` is the exact f64
//! expression the reference's engine uses (`tokens * kv / (bandwidth * 1e9) *
//! 1000`, in that order), so delays are bit-identical.

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
}

impl HandoffTransferTiming {
    /// Virtual transfer delay, or `None` when the timing model is incomplete or
    /// the bandwidth is `<= 0.0` (NaN is not `<= 0.0`: it yields `Some(NaN)`).
    pub fn delay_ms(&self, destination_missing_tokens: usize) -> Option<f64> {
        let tokens = match self.mode {
            TransferTimingMode::FullPrompt => self.full_prompt_tokens,
            TransferTimingMode::DestinationMissing => destination_missing_tokens,
        };
        let kv_bytes_per_token = self.kv_bytes_per_token?;
        let bandwidth_gb_s = self.bandwidth_gb_s?;
        if bandwidth_gb_s <= 0.0 {
            return None;
        }
        Some(tokens as f64 * kv_bytes_per_token as f64 / (bandwidth_gb_s * 1e9) * 1000.0)
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
}
