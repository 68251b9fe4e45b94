//! Bearer tokens of thresholdd: the daemon reads its own from `--token-file` or the
//! environment, and a node reads the one its `remote_signer.token_file` names, from the same
//! kind of file.

use crate::{read_bounded, ConfigError};
use std::path::Path;

/// Longest thresholdd bearer token accepted, in characters.
pub const MAX_TOKEN_CHARS: usize = 4096;

/// Reads a thresholdd bearer token from `path` (at most 64 MiB read) with [`parse_token`]. The
/// node's `remote_signer.token_file` and thresholdd's `--token-file` read the same file this
/// way. Errors: [`ConfigError::Io`] for a file that cannot be read, then as [`parse_token`].
pub fn read_token_file(path: &Path) -> Result<String, ConfigError> {
    parse_token(&read_bounded(path)?, &path.display().to_string())
}

/// A thresholdd bearer token from `text` (named `source` in errors): the text with surrounding
/// whitespace dropped, so a trailing newline never becomes part of it. Errors:
/// [`ConfigError::Token`] for no token (empty or only whitespace), one over
/// [`MAX_TOKEN_CHARS`], or one an HTTP header cannot carry (anything but printable ASCII
/// without spaces; RFC 9110 §5.5 field values).
pub fn parse_token(text: &str, source: &str) -> Result<String, ConfigError> {
    let token = text.trim();
    if token.is_empty() {
        return Err(ConfigError::Token(format!(
            "{source}: no token (empty or only whitespace)"
        )));
    }
    if token.len() > MAX_TOKEN_CHARS {
        return Err(ConfigError::Token(format!(
            "{source}: the token is longer than {MAX_TOKEN_CHARS} characters"
        )));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ConfigError::Token(format!(
            "{source}: the token may hold only printable ASCII without spaces (it travels in an \
             HTTP header)"
        )));
    }
    Ok(token.to_string())
}
