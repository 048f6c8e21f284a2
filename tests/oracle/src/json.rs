//! A small std-only JSON reader and writer for trace lines.
//!
//! Rule kept here: reading accepts RFC 8259 JSON plus the literals `NaN`,
//! `Infinity` and `-Infinity`, nested at most 4 objects/arrays deep (what a
//! trace line needs), with no key repeated in an object and no lone surrogate
//! escape: the same text `handoff_fsm.io.jsontext` reads. Writing produces what
//! Python's `json.dumps` would (default separators, `ensure_ascii`, float
//! `repr`), so a reply line is byte-identical to `json.dumps` of the same dict
//! and `json.loads` recovers every f64 bit.

use std::fmt::Write as _;

/// Objects/arrays nested deeper than this are rejected: a trace line nests 4
/// (line, fact, variant, timing), and Python's replay rejects deeper text before parsing.
const MAX_NESTING: usize = 4;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// The exact JSON number text (integers and floats are told apart later).
    Number(String),
    /// `NaN`, `Infinity` or `-Infinity`.
    NonFinite(f64),
    String(String),
    Array(Vec<Value>),
    /// Members in document order (a repeated key is a syntax error).
    Object(Vec<(String, Value)>),
}

impl Value {
    /// A non-negative JSON integer (no fraction, no exponent, no sign) that fits u64.
    ///
    /// `-0` is rejected like serde_json does (it reads `-0` as the float -0.0).
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(text) if text.bytes().all(|b| b.is_ascii_digit()) => text.parse().ok(),
            _ => None,
        }
    }

    /// Any JSON number (integer or not) or a non-finite literal, as f64.
    ///
    /// Rounding is correct (round-half-even), like Python's `float()`. A
    /// magnitude beyond f64 becomes ±inf (Python's `json.loads("1e400")` too).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(text) => text.parse().ok(),
            Value::NonFinite(x) => Some(*x),
            _ => None,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) | Value::NonFinite(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

/// Parse one complete JSON text (surrounding JSON whitespace allowed).
pub fn parse(text: &str) -> Result<Value, String> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        text,
        pos: 0,
    };
    parser.skip_ws();
    let value = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != parser.bytes.len() {
        return Err(parser.error("extra data after the JSON value"));
    }
    Ok(value)
}

struct Parser<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> String {
        format!("invalid JSON at column {}: {what}", self.pos + 1)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn eat_literal(&mut self, literal: &str) -> bool {
        if self.bytes[self.pos..].starts_with(literal.as_bytes()) {
            self.pos += literal.len();
            true
        } else {
            false
        }
    }

    /// A value inside `depth` enclosing objects/arrays.
    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth >= MAX_NESTING && matches!(self.peek(), Some(b'{' | b'[')) {
            return Err(self.error("nested more than 4 objects/arrays deep"));
        }
        match self.peek() {
            None => Err(self.error("expected a value, found end of line")),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b't') if self.eat_literal("true") => Ok(Value::Bool(true)),
            Some(b'f') if self.eat_literal("false") => Ok(Value::Bool(false)),
            Some(b'n') if self.eat_literal("null") => Ok(Value::Null),
            Some(b'N') if self.eat_literal("NaN") => Ok(Value::NonFinite(f64::NAN)),
            Some(b'I') if self.eat_literal("Infinity") => Ok(Value::NonFinite(f64::INFINITY)),
            Some(b'-') if self.eat_literal("-Infinity") => {
                Ok(Value::NonFinite(f64::NEG_INFINITY))
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("expected a value")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, String> {
        self.pos += 1; // '{'
        let mut members = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a string key"));
            }
            let key_at = self.pos;
            let key = self.string()?;
            if members.iter().any(|(other, _)| *other == key) {
                self.pos = key_at;
                return Err(self.error("repeated key in an object"));
            }
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':'"));
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value(depth + 1)?;
            members.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(self.error("expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, String> {
        self.pos += 1; // '['
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.error("expected ',' or ']'")),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Result<Value, String> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.error("leading zero in a number"));
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.error("expected digits")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.error("expected digits after '.'"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("expected exponent digits"));
            }
        }
        Ok(Value::Number(self.text[start..self.pos].to_owned()))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let Some(chunk) = self.bytes.get(self.pos..self.pos + 4) else {
            return Err(self.error("truncated \\u escape"));
        };
        let mut v = 0u32;
        for &b in chunk {
            let d = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => return Err(self.error("invalid \\u escape")),
            };
            v = (v << 4) | u32::from(d);
        }
        self.pos += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        self.pos += 1; // opening quote
        let mut out = String::new();
        loop {
            let start = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // Splitting only at ASCII bytes keeps `start..pos` on char boundaries.
            out.push_str(&self.text[start..self.pos]);
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let Some(esc) = self.peek() else {
                        return Err(self.error("unterminated string"));
                    };
                    self.pos += 1;
                    match esc {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) {
                                if !self.eat_literal("\\u") {
                                    return Err(self.error("lone surrogate in \\u escape"));
                                }
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.error("lone surrogate in \\u escape"));
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&hi) {
                                return Err(self.error("lone surrogate in \\u escape"));
                            } else {
                                hi
                            };
                            out.push(char::from_u32(code).expect("valid scalar value"));
                        }
                        _ => {
                            self.pos -= 1;
                            return Err(self.error("invalid escape"));
                        }
                    }
                }
                Some(_) => return Err(self.error("control character in string")),
            }
        }
    }
}

/// Append `s` as a JSON string the way Python's `json.dumps` (ensure_ascii) does.
pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(ch),
            _ => {
                let mut units = [0u16; 2];
                for unit in ch.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// Append `x` as Python's `json.dumps` does: `repr(float)` for finite values
/// (shortest round-trip digits; exponent form iff the decimal exponent is
/// < -4 or >= 16, written `e-05`/`e+16`), `NaN`, `Infinity`, `-Infinity`.
pub fn write_f64(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("NaN");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    if x == 0.0 {
        out.push_str(if x.is_sign_negative() { "-0.0" } else { "0.0" });
        return;
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "-1.2345e-7", "1e16".
    let sci = format!("{x:e}");
    let (negative, sci) = match sci.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, sci.as_str()),
    };
    let (mantissa, exponent) = sci.split_once('e').expect("`{:e}` has an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` exponent is an integer");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let digits = python_tie_break(x.abs(), digits, exponent);
    // Python's decpt: value = 0.DIGITS * 10^decpt.
    let decpt = exponent + 1;
    if negative {
        out.push('-');
    }
    if -4 < decpt && decpt <= 16 {
        let n = digits.len() as i32;
        if decpt <= 0 {
            out.push_str("0.");
            for _ in 0..-decpt {
                out.push('0');
            }
            out.push_str(&digits);
        } else if decpt >= n {
            out.push_str(&digits);
            for _ in 0..decpt - n {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            out.push_str(&digits[..decpt as usize]);
            out.push('.');
            out.push_str(&digits[decpt as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
}

/// Rust's shortest digits and Python's `repr` (David Gay's dtoa, mode 0) agree
/// except when `|x|` lies exactly halfway between two shortest candidates that
/// both read back as `x`: Rust then takes the upper one, Python the one with an
/// even last digit (e.g. 95781546100480.625: Rust `...480.63`, Python
/// `...480.62`). Both read back as the same f64; this makes the text identical.
fn python_tie_break(x: f64, digits: String, exponent: i32) -> String {
    let n = digits.len() as i32;
    let Ok(d) = digits.parse::<u64>() else {
        return digits;
    };
    // value of the last digit of `d`: 10^k
    let k = exponent - (n - 1);
    for step in [1i64, -1] {
        let other = d as i64 + step;
        if other <= 0 || other.to_string().len() != digits.len() || other % 2 != 0 || d % 2 == 0 {
            continue;
        }
        // Is x exactly the midpoint (10d + 5*step) * 10^(k-1)?
        let midpoint = (10 * d as i64 + 5 * step) as u64;
        if !equals_decimal(x, midpoint, k - 1) {
            continue;
        }
        let candidate = other.to_string();
        if format!("{candidate}e{k}").parse::<f64>() == Ok(x) {
            return candidate;
        }
    }
    digits
}

/// Exactly `x == m * 10^j` for an odd `m` (x positive and finite)?
fn equals_decimal(x: f64, m: u64, j: i32) -> bool {
    debug_assert!(m % 2 == 1);
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1u64 << 52) - 1);
    let (mut mantissa, mut q) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1u64 << 52), biased - 1075)
    };
    if mantissa == 0 {
        return false;
    }
    let tz = mantissa.trailing_zeros();
    mantissa >>= tz;
    q += tz as i32;
    // x = mantissa * 2^q with mantissa odd; m * 10^j = (m * 5^j) * 2^j.
    if q != j {
        return false;
    }
    if j >= 0 {
        // odd parts: m * 5^j == mantissa
        5u128
            .checked_pow(j as u32)
            .and_then(|p| p.checked_mul(u128::from(m)))
            .is_some_and(|v| v == u128::from(mantissa))
    } else {
        // odd parts: m == mantissa * 5^-j
        5u128
            .checked_pow((-j) as u32)
            .and_then(|p| p.checked_mul(u128::from(mantissa)))
            .is_some_and(|v| v == u128::from(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(x: f64) -> String {
        let mut s = String::new();
        write_f64(&mut s, x);
        s
    }

    #[test]
    #[allow(clippy::excessive_precision)] // exact binary values on purpose (ties)
    fn python_float_repr() {
        assert_eq!(f(2.5), "2.5");
        assert_eq!(f(1.0), "1.0");
        assert_eq!(f(-0.0), "-0.0");
        assert_eq!(f(1e16), "1e+16");
        assert_eq!(f(1e15), "1000000000000000.0");
        assert_eq!(f(1.5e16), "1.5e+16");
        assert_eq!(f(0.0001), "0.0001");
        assert_eq!(f(0.00001), "1e-05");
        assert_eq!(f(1.2345e-7), "1.2345e-07");
        assert_eq!(f(1e300), "1e+300");
        assert_eq!(f(5e-324), "5e-324");
        assert_eq!(f(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(f(123456.789), "123456.789");
        assert_eq!(f(f64::NAN), "NaN");
        assert_eq!(f(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(f(10.0 * 1024.0 / (1.0 * 1e9) * 1000.0), "0.01024");
        // ties between two shortest candidates: Python keeps the even last digit
        assert_eq!(f(95781546100480.625), "95781546100480.62");
        assert_eq!(f(1133388824586003.25), "1133388824586003.2");
        assert_eq!(f(-95781546100480.625), "-95781546100480.62");
    }

    #[test]
    fn parse_basics() {
        let v = parse(r#" {"a": [1, -2.5e3, true, null, NaN, -Infinity], "b": "x\u00e9\ud83d\ude00\n"} "#)
            .unwrap();
        let Value::Object(m) = v else { panic!() };
        assert_eq!(m[1].1, Value::String("xé😀\n".into()));
        for bad in ["", "{", "{\"a\":1,}", "[1,]", "01", "1.", ".5", "1e", "+1", "nan", "\"\\x\"",
                    "\"\\ud800\"", "\"\\udc00x\"", "\"a\tb\"", "{} x", "'a'", "-", "tru", "[1 2]"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse("18446744073709551615").unwrap().as_u64(), Some(u64::MAX));
        assert_eq!(parse("18446744073709551616").unwrap().as_u64(), None);
        for not_u64 in ["-1", "-0", "1.0", "1e0", "true", "\"3\"", "NaN"] {
            assert_eq!(parse(not_u64).unwrap().as_u64(), None, "{not_u64}");
        }
        assert_eq!(parse("-0").unwrap().as_f64().map(f64::to_bits), Some((-0.0f64).to_bits()));
        assert!(parse(r#"{"a": 1, "b": {"a": 2}}"#).is_ok());
        assert!(parse(r#"{"a": 1, "b": 2, "a": 1}"#).is_err());
        assert!(parse(r#"[{"x": [{}]}]"#).is_ok());
        for deep in [r#"[{"x": [{"y": []}]}]"#, "[[[[[]]]]]", "[[[[[1]]]]]"] {
            assert!(parse(deep).is_err(), "{deep}");
        }
        assert!(parse(r#"[[["[[[[[[["]]]"#).is_ok());
        assert_eq!(parse("1e400").unwrap().as_f64(), Some(f64::INFINITY));
    }

    #[test]
    fn python_string_escapes() {
        let mut s = String::new();
        write_str(&mut s, "a\"\\/\n\u{1}\u{7f}é😀");
        assert_eq!(s, r#""a\"\\/\n\u0001\u007f\u00e9\ud83d\ude00""#);
    }
}
