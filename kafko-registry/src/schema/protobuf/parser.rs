//! A recursive-descent reader of `.proto` files (proto2 and proto3) into a
//! [`ProtoFile`]: its syntax, package, imports, messages with their fields, and enums.
//! Options, reserved ranges, extensions and services are read for their syntax and
//! kept no further.

use super::lexer::Token;
use super::{Field, Label, Message, ProtoFile, Syntax};

/// Nesting of messages (and of option values) allowed, so that a hostile schema cannot
/// exhaust the stack.
const MAX_DEPTH: usize = 64;

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    file: ProtoFile,
}

type Res<T> = Result<T, String>;

/// Reads a whole file.
pub(crate) fn parse(tokens: Vec<Token>) -> Res<ProtoFile> {
    let mut p = Parser {
        tokens,
        at: 0,
        file: ProtoFile::default(),
    };
    p.file_body()?;
    Ok(p.file)
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Res<Token> {
        let t = self
            .tokens
            .get(self.at)
            .cloned()
            .ok_or_else(|| "unexpected end of the schema".to_owned())?;
        self.at += 1;
        Ok(t)
    }

    fn is_sym(&self, c: char) -> bool {
        self.peek() == Some(&Token::Sym(c))
    }

    fn is_ident(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token::Ident(w)) if w == word)
    }

    fn expect_sym(&mut self, c: char) -> Res<()> {
        match self.next()? {
            Token::Sym(s) if s == c => Ok(()),
            other => Err(format!("expected '{c}', found '{}'", other.text())),
        }
    }

    fn ident(&mut self) -> Res<String> {
        match self.next()? {
            Token::Ident(s) => Ok(s),
            other => Err(format!("expected a name, found '{}'", other.text())),
        }
    }

    fn string(&mut self) -> Res<String> {
        match self.next()? {
            Token::Str(s) => Ok(s),
            other => Err(format!("expected a string, found '{}'", other.text())),
        }
    }

    /// A dotted name, with an optional leading dot.
    fn full_ident(&mut self) -> Res<String> {
        let mut name = String::new();
        if self.is_sym('.') {
            self.at += 1;
            name.push('.');
        }
        name.push_str(&self.ident()?);
        while self.is_sym('.') {
            self.at += 1;
            name.push('.');
            name.push_str(&self.ident()?);
        }
        Ok(name)
    }

    fn int(&mut self) -> Res<i64> {
        let negative = self.is_sym('-');
        if negative {
            self.at += 1;
        }
        let text = match self.next()? {
            Token::Num(n) => n,
            Token::Ident(w) if w == "max" => return Ok(536_870_911),
            other => return Err(format!("expected a number, found '{}'", other.text())),
        };
        let value =
            if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
                i64::from_str_radix(hex, 16)
            } else if text.len() > 1 && text.starts_with('0') {
                i64::from_str_radix(&text[1..], 8)
            } else {
                text.parse()
            }
            .map_err(|_| format!("'{text}' is not an integer"))?;
        Ok(if negative { -value } else { value })
    }

    /// Skips tokens up to and including the `;` that ends a statement, across balanced
    /// brackets.
    fn skip_statement(&mut self) -> Res<()> {
        let mut depth = 0usize;
        loop {
            match self.next()? {
                Token::Sym('{' | '[' | '(' | '<') => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Err("options nest too deep".into());
                    }
                }
                Token::Sym('}' | ']' | ')' | '>') => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| "unbalanced brackets".to_owned())?;
                }
                Token::Sym(';') if depth == 0 => return Ok(()),
                _ => {}
            }
        }
    }

    /// Skips a bracketed block whose opening `open` is next, with what it holds.
    fn skip_block(&mut self, open: char) -> Res<()> {
        self.expect_sym(open)?;
        let mut depth = 1usize;
        while depth > 0 {
            match self.next()? {
                Token::Sym('{' | '[' | '(') => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Err("options nest too deep".into());
                    }
                }
                Token::Sym('}' | ']' | ')') => depth -= 1,
                _ => {}
            }
        }
        Ok(())
    }

    fn file_body(&mut self) -> Res<()> {
        if self.is_ident("syntax") {
            self.at += 1;
            self.expect_sym('=')?;
            self.file.syntax = match self.string()?.as_str() {
                "proto2" => Syntax::Proto2,
                "proto3" => Syntax::Proto3,
                other => return Err(format!("unknown syntax \"{other}\"")),
            };
            self.expect_sym(';')?;
        }
        while let Some(t) = self.peek().cloned() {
            match t {
                Token::Sym(';') => self.at += 1,
                Token::Ident(w) => match w.as_str() {
                    "package" => {
                        self.at += 1;
                        self.file.package = self.full_ident()?;
                        self.expect_sym(';')?;
                    }
                    "import" => {
                        self.at += 1;
                        if self.is_ident("public") || self.is_ident("weak") {
                            self.at += 1;
                        }
                        let path = self.string()?;
                        self.file.imports.push(path);
                        self.expect_sym(';')?;
                    }
                    "option" => self.skip_statement()?,
                    "message" => {
                        self.at += 1;
                        let prefix = self.file.package.clone();
                        let full = self.message(&prefix, 1)?;
                        self.file.top_level.push(full);
                    }
                    "enum" => {
                        self.at += 1;
                        let prefix = self.file.package.clone();
                        self.enumeration(&prefix)?;
                    }
                    "service" => {
                        self.at += 1;
                        self.ident()?;
                        self.skip_block('{')?;
                    }
                    "extend" => {
                        self.at += 1;
                        self.full_ident()?;
                        self.skip_block('{')?;
                    }
                    "edition" => return Err("protobuf editions are not read".into()),
                    other => return Err(format!("unexpected '{other}' at the top level")),
                },
                other => return Err(format!("unexpected '{}' at the top level", other.text())),
            }
        }
        Ok(())
    }

    fn qualified(prefix: &str, name: &str) -> String {
        if prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{prefix}.{name}")
        }
    }

    /// Reads a message; its full name.
    fn message(&mut self, prefix: &str, depth: usize) -> Res<String> {
        if depth > MAX_DEPTH {
            return Err(format!("messages nest deeper than {MAX_DEPTH} levels"));
        }
        let name = self.ident()?;
        let full = Self::qualified(prefix, &name);
        self.expect_sym('{')?;
        let mut message = Message::default();
        self.message_body(&full, depth, &mut message, None)?;
        if self.file.messages.insert(full.clone(), message).is_some() {
            return Err(format!("message {full} is defined twice"));
        }
        Ok(full)
    }

    /// Reads fields and nested definitions up to the closing `}`.
    fn message_body(
        &mut self,
        full: &str,
        depth: usize,
        message: &mut Message,
        oneof: Option<&str>,
    ) -> Res<()> {
        loop {
            let t = self.next()?;
            match t {
                Token::Sym('}') => return Ok(()),
                Token::Sym(';') => {}
                Token::Ident(w) => match w.as_str() {
                    "message" if oneof.is_none() => {
                        let nested = self.message(full, depth + 1)?;
                        message.nested.push(nested);
                    }
                    "enum" if oneof.is_none() => self.enumeration(full)?,
                    "extend" if oneof.is_none() => {
                        self.full_ident()?;
                        self.skip_block('{')?;
                    }
                    "option" | "reserved" | "extensions" => self.skip_statement()?,
                    "oneof" if oneof.is_none() => {
                        let name = self.ident()?;
                        self.expect_sym('{')?;
                        self.message_body(full, depth, message, Some(&name))?;
                    }
                    _ => {
                        self.at -= 1;
                        self.field(full, depth, message, oneof)?;
                    }
                },
                other => return Err(format!("unexpected '{}' in message {full}", other.text())),
            }
        }
    }

    fn field(
        &mut self,
        full: &str,
        depth: usize,
        message: &mut Message,
        oneof: Option<&str>,
    ) -> Res<()> {
        let label = match self.peek() {
            Some(Token::Ident(w)) if w == "repeated" => Label::Repeated,
            Some(Token::Ident(w)) if w == "optional" => Label::Optional,
            Some(Token::Ident(w)) if w == "required" => Label::Required,
            _ => Label::Singular,
        };
        if label != Label::Singular {
            self.at += 1;
        }
        let (ty, label) =
            if self.is_ident("map") && self.tokens.get(self.at + 1) == Some(&Token::Sym('<')) {
                self.at += 2;
                let key = self.full_ident()?;
                self.expect_sym(',')?;
                let value = self.full_ident()?;
                self.expect_sym('>')?;
                (format!("map<{key},{value}>"), Label::Repeated)
            } else {
                (self.full_ident()?, label)
            };
        if ty == "group" {
            let name = self.ident()?;
            self.expect_sym('=')?;
            let number = self.int()?;
            if self.is_sym('[') {
                self.skip_block('[')?;
            }
            self.expect_sym('{')?;
            let nested = Self::qualified(full, &name);
            let mut group = Message::default();
            if depth + 1 > MAX_DEPTH {
                return Err(format!("messages nest deeper than {MAX_DEPTH} levels"));
            }
            self.message_body(&nested, depth + 1, &mut group, None)?;
            message.nested.push(nested.clone());
            self.file.messages.insert(nested, group);
            return add_field(
                message,
                full,
                name.to_lowercase(),
                number,
                label,
                name,
                oneof,
            );
        }
        let name = self.ident()?;
        self.expect_sym('=')?;
        let number = self.int()?;
        if self.is_sym('[') {
            self.skip_block('[')?;
        }
        self.expect_sym(';')?;
        if self.file.syntax == Syntax::Proto3 && label == Label::Required {
            return Err(format!("{full}.{name}: proto3 has no required fields"));
        }
        add_field(message, full, name, number, label, ty, oneof)
    }

    fn enumeration(&mut self, prefix: &str) -> Res<()> {
        let name = self.ident()?;
        let full = Self::qualified(prefix, &name);
        self.expect_sym('{')?;
        let mut values: Vec<(String, i64)> = Vec::new();
        loop {
            match self.next()? {
                Token::Sym('}') => break,
                Token::Sym(';') => {}
                Token::Ident(w) if w == "option" || w == "reserved" => self.skip_statement()?,
                Token::Ident(value) => {
                    self.expect_sym('=')?;
                    let number = self.int()?;
                    if self.is_sym('[') {
                        self.skip_block('[')?;
                    }
                    self.expect_sym(';')?;
                    if values.iter().any(|(n, _)| *n == value) {
                        return Err(format!("enum {full}: value {value} is defined twice"));
                    }
                    values.push((value, number));
                }
                other => return Err(format!("unexpected '{}' in enum {full}", other.text())),
            }
        }
        match values.first() {
            None => return Err(format!("enum {full} has no values")),
            Some((v, n)) if self.file.syntax == Syntax::Proto3 && *n != 0 => {
                return Err(format!(
                    "enum {full}: the first value ({v}) must be 0 in proto3"
                ));
            }
            _ => {}
        }
        if self.file.enums.insert(full.clone(), values).is_some() {
            return Err(format!("enum {full} is defined twice"));
        }
        Ok(())
    }
}

pub(crate) fn add_field(
    message: &mut Message,
    full: &str,
    name: String,
    number: i64,
    label: Label,
    ty: String,
    oneof: Option<&str>,
) -> Res<()> {
    if !(1..=536_870_911).contains(&number) || (19_000..=19_999).contains(&number) {
        return Err(format!(
            "{full}.{name}: field number {number} is outside 1..=536870911 or in the reserved 19000..=19999"
        ));
    }
    if message.fields.contains_key(&number) {
        return Err(format!("{full}: field number {number} is used twice"));
    }
    if message.fields.values().any(|f| f.name == name) {
        return Err(format!("{full}: field {name} is defined twice"));
    }
    message.fields.insert(
        number,
        Field {
            name,
            label,
            ty,
            oneof: oneof.map(str::to_owned),
        },
    );
    Ok(())
}
