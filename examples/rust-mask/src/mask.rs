//! What the plugin does, free of the ABI: settings from the config, and the masking of
//! top-level members of a JSON object.

/// A configuration error about one key (the host shows the key's file:line:col).
#[derive(Debug, PartialEq)]
pub struct ConfigError {
    pub key: &'static str,
    pub message: String,
}

fn config_error(key: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError { key, message: message.into() }
}

#[derive(Debug)]
pub struct Settings {
    pub fields: Vec<String>,
    /// The replacement as JSON string content (escaped).
    replacement: Vec<u8>,
    pub keep_last: usize,
    pub reject_invalid: bool,
}

impl Settings {
    /// `entries`: the validated config as the host hands it over (every declared key,
    /// defaults filled in; a list key once per element).
    pub fn parse(entries: &[(String, String)]) -> Result<Settings, ConfigError> {
        let first = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        let mut fields = Vec::new();
        for (_, name) in entries.iter().filter(|(k, _)| k == "fields") {
            if name.is_empty() {
                return Err(config_error("fields", "an empty field name"));
            }
            if fields.contains(name) {
                return Err(config_error("fields", format!("'{name}' is listed twice")));
            }
            fields.push(name.clone());
        }
        if fields.is_empty() {
            return Err(config_error("fields", "name at least one field to mask"));
        }
        let text = first("keep.last").unwrap_or("0");
        let keep_last: i64 =
            text.parse().map_err(|_| config_error("keep.last", format!("'{text}' is not an integer")))?;
        if !(0..=1000).contains(&keep_last) {
            return Err(config_error("keep.last", format!("must be from 0 to 1000, got {keep_last}")));
        }
        let reject_invalid = match first("on.invalid").unwrap_or("reject") {
            "reject" => true,
            "keep" => false,
            other => return Err(config_error("on.invalid", format!("'{other}' is neither reject nor keep"))),
        };
        Ok(Settings {
            fields,
            replacement: escape(first("replacement").unwrap_or("***")),
            keep_last: keep_last as usize,
            reject_invalid,
        })
    }

    /// Masks the configured members of the JSON object `value` into `out`.
    pub fn mask(&self, value: &[u8], out: &mut Vec<u8>) -> Outcome {
        match self.scan(value, out) {
            Ok(0) => Outcome::Unchanged,
            Ok(n) => Outcome::Masked(n),
            Err((at, why)) => Outcome::Invalid(format!("value is not a JSON object: {why} at byte {at}")),
        }
    }

    fn scan(&self, s: &[u8], out: &mut Vec<u8>) -> Result<usize, (usize, &'static str)> {
        let mut i = skip_ws(s, 0);
        if s.get(i) != Some(&b'{') {
            return Err((i, "expected '{'"));
        }
        i = skip_ws(s, i + 1);
        let mut copied = 0; // s[..copied] is in out already
        let mut masked = 0;
        if s.get(i) == Some(&b'}') {
            i += 1;
        } else {
            loop {
                if s.get(i) != Some(&b'"') {
                    return Err((i, "expected a member name"));
                }
                let key_end = string_end(s, i)?;
                let wanted = self.fields.iter().any(|f| key_is(&s[i + 1..key_end - 1], f.as_bytes()));
                i = skip_ws(s, key_end);
                if s.get(i) != Some(&b':') {
                    return Err((i, "expected ':'"));
                }
                let start = skip_ws(s, i + 1);
                let end = value_end(s, start)?;
                if wanted && &s[start..end] != b"null" {
                    out.extend_from_slice(&s[copied..start]);
                    out.push(b'"');
                    out.extend_from_slice(&self.replacement);
                    if s[start] == b'"' {
                        out.extend_from_slice(tail(&s[start + 1..end - 1], self.keep_last));
                    }
                    out.push(b'"');
                    copied = end;
                    masked += 1;
                }
                i = skip_ws(s, end);
                match s.get(i) {
                    Some(b',') => i = skip_ws(s, i + 1),
                    Some(b'}') => {
                        i += 1;
                        break;
                    }
                    _ => return Err((i, "expected ',' or '}'")),
                }
            }
        }
        if skip_ws(s, i) != s.len() {
            return Err((i, "bytes after the object"));
        }
        if masked > 0 {
            out.extend_from_slice(&s[copied..]);
        }
        Ok(masked)
    }
}

#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// No configured member (or only nulls): forward the record as it is.
    Unchanged,
    /// This many members were masked; the new value is in `out`.
    Masked(usize),
    /// Not a JSON object; the reason.
    Invalid(String),
}

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
    }
    i
}

/// `s[start] == '"'`; the index just after the closing quote.
fn string_end(s: &[u8], start: usize) -> Result<usize, (usize, &'static str)> {
    let mut i = start + 1;
    while i < s.len() {
        match s[i] {
            b'"' => return Ok(i + 1),
            b'\\' => i += 2,
            c if c < 0x20 => return Err((i, "control character in a string")),
            _ => i += 1,
        }
    }
    Err((start, "unterminated string"))
}

/// The index just after the value starting at `start` (scanned, not fully validated).
fn value_end(s: &[u8], start: usize) -> Result<usize, (usize, &'static str)> {
    match s.get(start) {
        None => Err((start, "expected a value")),
        Some(b'"') => string_end(s, start),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut i = start;
            while i < s.len() {
                match s[i] {
                    b'"' => {
                        i = string_end(s, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            Err((start, "unterminated object or array"))
        }
        Some(c) if c.is_ascii_digit() || matches!(c, b'-' | b't' | b'f' | b'n') => {
            let mut i = start;
            while i < s.len() && !matches!(s[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                i += 1;
            }
            Ok(i)
        }
        Some(_) => Err((start, "unexpected character")),
    }
}

/// Whether the raw (still escaped) member name equals `want`.
fn key_is(raw: &[u8], want: &[u8]) -> bool {
    if !raw.contains(&b'\\') {
        return raw == want;
    }
    unescape(raw).map_or(false, |k| k.as_bytes() == want)
}

fn unescape(raw: &[u8]) -> Option<String> {
    let mut out = String::new();
    let text = std::str::from_utf8(raw).ok()?;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            '"' => out.push('"'),
            '\\' => out.push('\\'),
            '/' => out.push('/'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'u' => {
                let hex = |chars: &mut std::str::Chars| -> Option<u32> {
                    let h: String = chars.by_ref().take(4).collect();
                    if h.len() == 4 {
                        u32::from_str_radix(&h, 16).ok()
                    } else {
                        None
                    }
                };
                let hi = hex(&mut chars)?;
                let code = if (0xD800..0xDC00).contains(&hi) {
                    if chars.next()? != '\\' || chars.next()? != 'u' {
                        return None;
                    }
                    let lo = hex(&mut chars)?;
                    0x10000 + ((hi - 0xD800) << 10) + (lo.checked_sub(0xDC00)? & 0x3FF)
                } else {
                    hi
                };
                out.push(char::from_u32(code)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// The last `n` characters of raw string content, whole escapes and UTF-8 sequences
/// counting as one; empty when the content is not longer than `n` (a short value is
/// masked whole rather than shown whole).
fn tail(raw: &[u8], n: usize) -> &[u8] {
    if n == 0 {
        return &[];
    }
    let mut starts = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        starts.push(i);
        i += match raw[i] {
            b'\\' if raw.get(i + 1) == Some(&b'u') => 6,
            b'\\' => 2,
            c if c >= 0xF0 => 4,
            c if c >= 0xE0 => 3,
            c if c >= 0xC0 => 2,
            _ => 1,
        };
    }
    if starts.len() <= n {
        return &[];
    }
    &raw[starts[starts.len() - n].min(raw.len())..]
}

/// `text` as JSON string content.
fn escape(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            c if (c as u32) < 0x20 => out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes()),
            c => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let entries: Vec<(String, String)> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::parse(&entries)
    }

    fn masked(s: &Settings, value: &str) -> String {
        let mut out = Vec::new();
        match s.mask(value.as_bytes(), &mut out) {
            Outcome::Unchanged => value.to_string(),
            Outcome::Masked(_) => String::from_utf8(out).unwrap(),
            Outcome::Invalid(why) => format!("invalid: {why}"),
        }
    }

    #[test]
    fn masks_named_members_only() {
        let s = settings(&[("fields", "card"), ("fields", "pin"), ("keep.last", "4")]).unwrap();
        assert_eq!(
            masked(&s, r#"{"id":"a1","card":"4111111111111111","pin":1234,"x":{"card":"1"}}"#),
            r#"{"id":"a1","card":"***1111","pin":"***","x":{"card":"1"}}"#
        );
        assert_eq!(masked(&s, r#" { "card" : "12" } "#), r#" { "card" : "***" } "#);
        assert_eq!(masked(&s, r#"{"other":1}"#), r#"{"other":1}"#);
        assert_eq!(masked(&s, r#"{"card":null}"#), r#"{"card":null}"#);
        assert_eq!(masked(&s, r#"{"c\u0061rd":"abcdef\u00e9"}"#), r#"{"c\u0061rd":"***def\u00e9"}"#);
    }

    #[test]
    fn replacement_is_escaped() {
        let s = settings(&[("fields", "a"), ("replacement", "<\"x\">")]).unwrap();
        assert_eq!(masked(&s, r#"{"a":"b"}"#), r#"{"a":"<\"x\">"}"#);
    }

    #[test]
    fn non_objects_are_invalid() {
        let s = settings(&[("fields", "a")]).unwrap();
        assert!(masked(&s, "plain text").starts_with("invalid: value is not a JSON object: expected '{'"));
        assert!(masked(&s, r#"{"a":"b""#).starts_with("invalid:"));
        assert!(masked(&s, r#"{"a":"b"} x"#).starts_with("invalid:"));
        assert!(masked(&s, r#"["a"]"#).starts_with("invalid:"));
    }

    #[test]
    fn bad_settings_name_the_key() {
        assert_eq!(settings(&[]).unwrap_err().key, "fields");
        assert_eq!(settings(&[("fields", "")]).unwrap_err().key, "fields");
        let e = settings(&[("fields", "a"), ("keep.last", "-1")]).unwrap_err();
        assert_eq!(e, ConfigError { key: "keep.last", message: "must be from 0 to 1000, got -1".into() });
    }
}
