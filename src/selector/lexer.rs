//! Tokens of the CEL grammar (cel-spec `doc/langdef.md`, "Syntax" and "Lexical rules").

use super::error::SelectorError;

/// One token kind. Literal payloads are already decoded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Int(i64),
    /// An integer literal too large for `i64` whose only valid use is after a unary minus
    /// (`-9223372036854775808`).
    IntMinMagnitude,
    Uint(u64),
    Double(f64),
    Str(String),
    Bytes(Vec<u8>),
    Ident(String),
    True,
    False,
    Null,
    In,
    EqEq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    AndAnd,
    OrOr,
    Bang,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Question,
    Colon,
    Dot,
    /// `.?`
    DotQuestion,
    Comma,
    LBracket,
    /// `[?`
    LBracketQuestion,
    RBracket,
    LParen,
    RParen,
    LBrace,
    RBrace,
    Eof,
}

impl Tok {
    /// How the token is named in "expected X, found Y" messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Int(v) => format!("integer {v}"),
            Tok::IntMinMagnitude => "integer 9223372036854775808".to_owned(),
            Tok::Uint(v) => format!("unsigned integer {v}u"),
            Tok::Double(v) => format!("double {v}"),
            Tok::Str(_) => "string literal".to_owned(),
            Tok::Bytes(_) => "bytes literal".to_owned(),
            Tok::Ident(name) => format!("identifier '{name}'"),
            Tok::Eof => "end of input".to_owned(),
            other => format!("'{}'", other.symbol()),
        }
    }

    fn symbol(&self) -> &'static str {
        match self {
            Tok::True => "true",
            Tok::False => "false",
            Tok::Null => "null",
            Tok::In => "in",
            Tok::EqEq => "==",
            Tok::NotEq => "!=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::AndAnd => "&&",
            Tok::OrOr => "||",
            Tok::Bang => "!",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            Tok::Colon => ":",
            Tok::Dot => ".",
            Tok::DotQuestion => ".?",
            Tok::LBracketQuestion => "[?",
            Tok::Comma => ",",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            _ => "?",
        }
    }
}

/// A token with its byte range in the source.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub(crate) tok: Tok,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// Words the CEL spec reserves: they are neither identifiers nor keywords of the language.
const RESERVED: &[&str] = &[
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// Splits `src` into tokens, ending with [`Tok::Eof`].
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, SelectorError> {
    let mut lx = Lexer { src, bytes: src.as_bytes(), pos: 0, out: Vec::new() };
    lx.run()?;
    Ok(lx.out)
}

struct Lexer<'s> {
    src: &'s str,
    bytes: &'s [u8],
    pos: usize,
    out: Vec<Token>,
}

impl Lexer<'_> {
    fn err(&self, at: usize, message: impl Into<String>) -> SelectorError {
        SelectorError::syntax(self.src, at, message)
    }

    fn peek(&self, off: usize) -> u8 {
        self.bytes.get(self.pos + off).copied().unwrap_or(0)
    }

    fn push(&mut self, tok: Tok, start: usize) {
        self.out.push(Token { tok, start, end: self.pos });
    }

    fn run(&mut self) -> Result<(), SelectorError> {
        loop {
            self.skip_space_and_comments();
            let start = self.pos;
            let Some(&c) = self.bytes.get(self.pos) else {
                self.push(Tok::Eof, start);
                return Ok(());
            };
            match c {
                b'0'..=b'9' => self.number(start)?,
                b'.' if self.peek(1).is_ascii_digit() && !self.prev_ends_operand() => {
                    self.number(start)?;
                }
                b'"' | b'\'' => self.string(start, false, false)?,
                b'r' | b'R' | b'b' | b'B' if self.string_prefix().is_some() => {
                    let (raw, bytes, len) = self.string_prefix().unwrap_or((false, false, 0));
                    self.pos += len;
                    self.string(start, raw, bytes)?;
                }
                b'_' | b'a'..=b'z' | b'A'..=b'Z' => self.ident(start)?,
                _ => self.operator(start, c)?,
            }
        }
    }

    fn prev_ends_operand(&self) -> bool {
        matches!(
            self.out.last().map(|t| &t.tok),
            Some(
                Tok::Ident(_)
                    | Tok::Int(_)
                    | Tok::Uint(_)
                    | Tok::Double(_)
                    | Tok::Str(_)
                    | Tok::Bytes(_)
                    | Tok::True
                    | Tok::False
                    | Tok::Null
                    | Tok::RParen
                    | Tok::RBracket
                    | Tok::RBrace
            )
        )
    }

    /// Recognises `r"`, `b'`, `rb"`, `Br'` ... and returns (raw, bytes, prefix length).
    fn string_prefix(&self) -> Option<(bool, bool, usize)> {
        let a = self.peek(0).to_ascii_lowercase();
        let b = self.peek(1);
        let quote = |x: u8| x == b'"' || x == b'\'';
        if quote(b) {
            return Some((a == b'r', a == b'b', 1));
        }
        let b = b.to_ascii_lowercase();
        if (a == b'r' && b == b'b' || a == b'b' && b == b'r') && quote(self.peek(2)) {
            return Some((true, true, 2));
        }
        None
    }

    fn skip_space_and_comments(&mut self) {
        loop {
            match self.peek(0) {
                b' ' | b'\t' | b'\n' | b'\r' | 0x0c => self.pos += 1,
                b'/' if self.peek(1) == b'/' => {
                    while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                _ => return,
            }
        }
    }

    fn ident(&mut self, start: usize) -> Result<(), SelectorError> {
        while matches!(self.peek(0), b'_' | b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9') {
            self.pos += 1;
        }
        let word = &self.src[start..self.pos];
        let tok = match word {
            "true" => Tok::True,
            "false" => Tok::False,
            "null" => Tok::Null,
            "in" => Tok::In,
            w if RESERVED.contains(&w) => {
                return Err(self.err(start, format!("reserved identifier '{w}'")));
            }
            w => Tok::Ident(w.to_owned()),
        };
        self.push(tok, start);
        Ok(())
    }

    fn number(&mut self, start: usize) -> Result<(), SelectorError> {
        if self.peek(0) == b'0' && matches!(self.peek(1), b'x' | b'X') {
            self.pos += 2;
            let digits_start = self.pos;
            while self.peek(0).is_ascii_hexdigit() {
                self.pos += 1;
            }
            let digits = &self.src[digits_start..self.pos];
            if digits.is_empty() {
                return Err(self.err(start, "hexadecimal literal without digits"));
            }
            return self.int_suffix(start, digits, 16);
        }
        while self.peek(0).is_ascii_digit() {
            self.pos += 1;
        }
        let mut is_float = false;
        if self.peek(0) == b'.' && self.peek(1).is_ascii_digit() {
            is_float = true;
            self.pos += 1;
            while self.peek(0).is_ascii_digit() {
                self.pos += 1;
            }
        }
        if matches!(self.peek(0), b'e' | b'E') {
            let sign = usize::from(matches!(self.peek(1), b'+' | b'-'));
            if self.peek(1 + sign).is_ascii_digit() {
                is_float = true;
                self.pos += 1 + sign;
                while self.peek(0).is_ascii_digit() {
                    self.pos += 1;
                }
            }
        }
        if is_float {
            let text = &self.src[start..self.pos];
            // Out-of-range literals are errors, as in cel-go (Go's ParseFloat range error).
            let v: f64 = text
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| self.err(start, format!("invalid double literal '{text}'")))?;
            self.push(Tok::Double(v), start);
            return Ok(());
        }
        let digits = &self.src[start..self.pos];
        self.int_suffix(start, digits, 10)
    }

    fn int_suffix(&mut self, start: usize, digits: &str, radix: u32) -> Result<(), SelectorError> {
        if matches!(self.peek(0), b'u' | b'U') {
            self.pos += 1;
            let v = u64::from_str_radix(digits, radix)
                .map_err(|_| self.err(start, "unsigned integer literal out of range"))?;
            self.push(Tok::Uint(v), start);
            return Ok(());
        }
        let tok = match i64::from_str_radix(digits, radix) {
            Ok(v) => Tok::Int(v),
            Err(_) if u64::from_str_radix(digits, radix) == Ok(1u64 << 63) => Tok::IntMinMagnitude,
            Err(_) => return Err(self.err(start, "integer literal out of range")),
        };
        self.push(tok, start);
        Ok(())
    }

    fn operator(&mut self, start: usize, c: u8) -> Result<(), SelectorError> {
        let two = |second: u8, lx: &Self| lx.peek(1) == second;
        let (tok, len) = match c {
            b'=' if two(b'=', self) => (Tok::EqEq, 2),
            b'!' if two(b'=', self) => (Tok::NotEq, 2),
            b'!' => (Tok::Bang, 1),
            b'<' if two(b'=', self) => (Tok::Le, 2),
            b'<' => (Tok::Lt, 1),
            b'>' if two(b'=', self) => (Tok::Ge, 2),
            b'>' => (Tok::Gt, 1),
            b'&' if two(b'&', self) => (Tok::AndAnd, 2),
            b'|' if two(b'|', self) => (Tok::OrOr, 2),
            b'+' => (Tok::Plus, 1),
            b'-' => (Tok::Minus, 1),
            b'*' => (Tok::Star, 1),
            b'/' => (Tok::Slash, 1),
            b'%' => (Tok::Percent, 1),
            b'?' => (Tok::Question, 1),
            b':' => (Tok::Colon, 1),
            b'.' if self.peek(1) == b'?' => (Tok::DotQuestion, 2),
            b'[' if self.peek(1) == b'?' => (Tok::LBracketQuestion, 2),
            b'.' => (Tok::Dot, 1),
            b',' => (Tok::Comma, 1),
            b'[' => (Tok::LBracket, 1),
            b']' => (Tok::RBracket, 1),
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b'{' => (Tok::LBrace, 1),
            b'}' => (Tok::RBrace, 1),
            _ => {
                let ch = self.src[start..].chars().next().unwrap_or('?');
                return Err(self.err(start, format!("unexpected character '{ch}'")));
            }
        };
        self.pos += len;
        self.push(tok, start);
        Ok(())
    }

    fn string(&mut self, start: usize, raw: bool, bytes: bool) -> Result<(), SelectorError> {
        let q = self.peek(0);
        let triple = self.peek(1) == q && self.peek(2) == q;
        self.pos += if triple { 3 } else { 1 };
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&c) = self.bytes.get(self.pos) else {
                return Err(self.err(start, "unterminated string literal"));
            };
            if c == q && (!triple || (self.peek(1) == q && self.peek(2) == q)) {
                self.pos += if triple { 3 } else { 1 };
                break;
            }
            if !triple && (c == b'\n' || c == b'\r') {
                return Err(self.err(start, "newline in single-quoted string literal"));
            }
            if c == b'\\' && !raw {
                self.escape(&mut out, bytes)?;
                continue;
            }
            out.push(c);
            self.pos += 1;
        }
        let tok = if bytes {
            Tok::Bytes(out)
        } else {
            // Every escape produced valid UTF-8 and the source is UTF-8.
            Tok::Str(String::from_utf8(out).map_err(|_| self.err(start, "invalid UTF-8"))?)
        };
        self.push(tok, start);
        Ok(())
    }

    fn escape(&mut self, out: &mut Vec<u8>, bytes: bool) -> Result<(), SelectorError> {
        let at = self.pos;
        let c = self.peek(1);
        self.pos += 2;
        let simple = match c {
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(0x0b),
            b'\\' => Some(b'\\'),
            b'\'' => Some(b'\''),
            b'"' => Some(b'"'),
            b'`' => Some(b'`'),
            b'?' => Some(b'?'),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            return Ok(());
        }
        let code: u32 = match c {
            b'x' | b'X' => self.hex_digits(at, 2)?,
            b'u' if !bytes => self.hex_digits(at, 4)?,
            b'U' if !bytes => self.hex_digits(at, 8)?,
            b'0'..=b'3' => {
                let d1 = self.peek(0);
                let d2 = self.peek(1);
                if !(b'0'..=b'7').contains(&d1) || !(b'0'..=b'7').contains(&d2) {
                    return Err(self.err(at, "octal escape needs three digits"));
                }
                self.pos += 2;
                u32::from(c - b'0') * 64 + u32::from(d1 - b'0') * 8 + u32::from(d2 - b'0')
            }
            _ => return Err(self.err(at, "invalid escape sequence")),
        };
        if bytes {
            // Hex and octal escapes are byte values in a bytes literal.
            out.push(code as u8);
        } else {
            let ch = char::from_u32(code).ok_or_else(|| self.err(at, "escape is not a valid Unicode code point"))?;
            let mut buf = [0u8; 4];
            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        }
        Ok(())
    }

    fn hex_digits(&mut self, at: usize, n: usize) -> Result<u32, SelectorError> {
        let end = self.pos + n;
        let digits = self.src.get(self.pos..end).filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()));
        let Some(digits) = digits else {
            return Err(self.err(at, format!("escape needs {n} hexadecimal digits")));
        };
        self.pos = end;
        u32::from_str_radix(digits, 16).map_err(|_| self.err(at, "invalid hexadecimal escape"))
    }
}
