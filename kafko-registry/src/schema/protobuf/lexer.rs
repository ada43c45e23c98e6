//! Tokens of a `.proto` file: identifiers, numbers, strings and symbols, with comments
//! and whitespace dropped.

/// One token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    /// An identifier or keyword (no dots).
    Ident(String),
    /// A number as written (integer or float, without its sign).
    Num(String),
    /// A string literal, unescaped.
    Str(String),
    /// One punctuation character.
    Sym(char),
}

impl Token {
    /// The token as `.proto` text.
    pub(crate) fn text(&self) -> String {
        match self {
            Token::Ident(s) | Token::Num(s) => s.clone(),
            Token::Str(s) => {
                let mut out = String::from("\"");
                for c in s.chars() {
                    match c {
                        '"' => out.push_str("\\\""),
                        '\\' => out.push_str("\\\\"),
                        '\n' => out.push_str("\\n"),
                        c => out.push(c),
                    }
                }
                out.push('"');
                out
            }
            Token::Sym(c) => c.to_string(),
        }
    }
}

/// Splits `text` into tokens.
pub(crate) fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let line_of = |i: usize| chars[..i].iter().filter(|c| **c == '\n').count() + 1;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            let start = i;
            i += 2;
            loop {
                if i + 1 >= chars.len() {
                    return Err(format!("line {}: unterminated comment", line_of(start)));
                }
                if chars[i] == '*' && chars[i + 1] == '/' {
                    i += 2;
                    break;
                }
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric()
                    || chars[i] == '.'
                    || ((chars[i] == '-' || chars[i] == '+')
                        && matches!(chars[i - 1], 'e' | 'E')
                        && !chars[start..i].iter().any(|c| matches!(c, 'x' | 'X'))))
            {
                i += 1;
            }
            out.push(Token::Num(chars[start..i].iter().collect()));
        } else if c == '"' || c == '\'' {
            let start = i;
            i += 1;
            let mut s = String::new();
            loop {
                match chars.get(i) {
                    None | Some('\n') => {
                        return Err(format!("line {}: unterminated string", line_of(start)));
                    }
                    Some(&q) if q == c => {
                        i += 1;
                        break;
                    }
                    Some('\\') => {
                        let e = chars.get(i + 1).copied().unwrap_or('\\');
                        s.push(match e {
                            'n' => '\n',
                            't' => '\t',
                            'r' => '\r',
                            '0' => '\0',
                            other => other,
                        });
                        i += 2;
                    }
                    Some(&other) => {
                        s.push(other);
                        i += 1;
                    }
                }
            }
            out.push(Token::Str(s));
        } else if "{}[]()<>;=,.:-+/".contains(c) {
            out.push(Token::Sym(c));
            i += 1;
        } else {
            return Err(format!("line {}: unexpected character '{c}'", line_of(i)));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_drop_comments_and_keep_literals() {
        let t = tokens(
            "syntax = \"proto3\"; // c\n/* b */ message A { int32 x = 1 [default = -1.5e-3]; }",
        )
        .unwrap();
        assert_eq!(t[0], Token::Ident("syntax".into()));
        assert_eq!(t[2], Token::Str("proto3".into()));
        assert!(t.contains(&Token::Num("1.5e-3".into())), "{t:?}");
        assert!(tokens("message A { /* open").is_err());
        assert!(tokens("\"open").is_err());
        assert!(tokens("message A { int32 x = 1 ; } #").is_err());
    }
}
