//! Echoing what a user typed back in a message, safely: cut short, and
//! with characters that hide or reorder text written out as escapes.

/// The longest value, in characters, an error message echoes back (a paste
/// [`crate::paste::LineError`], a tuple [`crate::error::ParseError`]).
pub const SHOWN_CHARS: usize = 64;

/// A value fit to echo back: at most [`SHOWN_CHARS`] characters (a cut
/// one ends in `…`), with control, bidirectional-override, byte-order-mark
/// and other invisible characters written as `\u{…}`, so an error message
/// shows exactly what was there and cannot reorder or hide text around it.
pub fn shown(s: &str) -> String {
    let mut out = String::new();
    let mut count = 0usize;
    let mut piece = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        piece.clear();
        if invisible(c) {
            piece.push_str(&format!("\\u{{{:04x}}}", c as u32));
        } else {
            piece.push(c);
        }
        let n = piece.chars().count();
        let room = if chars.peek().is_some() {
            SHOWN_CHARS - 1
        } else {
            SHOWN_CHARS
        };
        if count + n > room {
            out.push('…');
            return out;
        }
        out.push_str(&piece);
        count += n;
    }
    out
}

/// Characters that display as nothing, or change how the text around them
/// displays.
fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00ad}' | '\u{034f}' | '\u{061c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}'
            | '\u{fff0}'..='\u{fffb}'
            | '\u{e0000}'..='\u{e007f}')
}
