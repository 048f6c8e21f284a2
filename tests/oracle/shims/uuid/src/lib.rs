//! Minimal std-only stand-in for `uuid`: a 128-bit value with `from_u128`
//! (what the reference's own tests use), parsing of the text forms the real
//! crate's `Uuid::parse_str` accepts (simple, hyphenated, braced, URN), and
//! lowercase hyphenated `Display`.

use std::fmt;

#[derive(Clone, Copy, Debug, Default, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub struct Uuid(u128);

impl Uuid {
    pub const fn from_u128(value: u128) -> Self {
        Self(value)
    }

    pub const fn as_u128(&self) -> u128 {
        self.0
    }

    /// Parse what `uuid` 1.x's `Uuid::parse_str` parses: 32 hex digits,
    /// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, that form in braces, or after
    /// `urn:uuid:` (lowercase prefix); hex digits in either case.
    pub fn parse_str(text: &str) -> Option<Self> {
        let bytes = match text.as_bytes() {
            [b'{', inner @ .., b'}'] if inner.len() == 36 => inner,
            [b'u', b'r', b'n', b':', b'u', b'u', b'i', b'd', b':', inner @ ..]
                if inner.len() == 36 =>
            {
                inner
            }
            bytes => bytes,
        };
        let mut value: u128 = 0;
        let mut push = |b: u8| -> bool {
            let digit = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => return false,
            };
            value = (value << 4) | u128::from(digit);
            true
        };
        match bytes.len() {
            32 => {
                for &b in bytes {
                    if !push(b) {
                        return None;
                    }
                }
            }
            36 => {
                for (i, &b) in bytes.iter().enumerate() {
                    if matches!(i, 8 | 13 | 18 | 23) {
                        if b != b'-' {
                            return None;
                        }
                    } else if !push(b) {
                        return None;
                    }
                }
            }
            _ => return None,
        }
        Some(Self(value))
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        write!(
            f,
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            (v >> 96) as u32,
            ((v >> 80) & 0xffff) as u16,
            ((v >> 64) & 0xffff) as u16,
            ((v >> 48) & 0xffff) as u16,
            (v & 0xffff_ffff_ffff) as u64,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Uuid;

    #[test]
    fn round_trip() {
        let text = "0123ABCD-4567-89ab-cdef-0123456789AB";
        let u = Uuid::parse_str(text).unwrap();
        assert_eq!(u.to_string(), text.to_ascii_lowercase());
        assert_eq!(Uuid::parse_str("0123abcd456789abcdef0123456789ab"), Some(u));
        assert_eq!(Uuid::from_u128(1).to_string(), "00000000-0000-0000-0000-000000000001");
        assert_eq!(Uuid::parse_str("{0123abcd-4567-89ab-cdef-0123456789ab}"), Some(u));
        assert_eq!(Uuid::parse_str("urn:uuid:0123abcd-4567-89AB-cdef-0123456789ab"), Some(u));
        for bad in ["", "{0123abcd456789abcdef0123456789ab}", "urn:uuid:0123abcd456789abcdef0123456789ab",
                    "URN:UUID:0123abcd-4567-89ab-cdef-0123456789ab", "{0123abcd-4567-89ab-cdef-0123456789ab",
                    "{{0123abcd-4567-89ab-cdef-0123456789ab}}", " 0123abcd-4567-89ab-cdef-0123456789ab",
                    "0123abcd-4567-89ab-cdef-0123456789a",
                    "0123abcd-4567-89ab-cdef_0123456789ab", "0123abcd-4567-89ab-cdef-0123456789ag",
                    "0123abcd4-567-89ab-cdef-0123456789ab", "+123abcd456789abcdef0123456789ab"] {
            assert_eq!(Uuid::parse_str(bad), None, "{bad}");
        }
    }
}
