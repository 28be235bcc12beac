#pragma once
/// @file printable.h
/// Text from outside (GGUF strings, config.json values, log lines, file names) made safe to print: a GGUF whose
/// general.name holds "\x1b]0;owned\x07" must not retitle the terminal, and a name with a line break must not
/// forge a line of the report.

#include <string>
#include <string_view>

namespace kvfit {

/// `text` with every character that is not printable spelled out, all else unchanged (so JSON stays valid JSON):
///   C0 controls and DEL -> "\x1b", "\r" -> "\x0d" (keeping "\n" when `keep_newlines`, and "\t");
///   C1 controls, line/paragraph separators and bidirectional overrides (U+0080-U+009F, U+2028-U+2029,
///   U+202A-U+202E, U+2066-U+2069) -> "\u009b", "\u202e";
///   bytes that are not UTF-8 -> "\xff".
/// Examples: "a\x1b[31mb" -> "a\\x1b[31mb"; "Qwen\u00e9" unchanged; "\xff" -> "\\xff".
std::string printable(std::string_view text, bool keep_newlines = true);

/// One word of a command line to paste into a POSIX shell (every "Launch:" line, `kvfit exec`'s commands): unchanged
/// when it holds only characters no shell interprets (letters, digits and - _ . / = : , + @ %), else in single quotes
/// with each ' written '\''; a word holding a control character (a newline in a file name) in ANSI-C quotes $'...'
/// with \n, \t, \r, \xHH, \' and \\ (bash, zsh, ksh, POSIX.1-2024 sh), so no control character is printed raw. The
/// pasted command passes exactly `word` as one argument; nothing in it runs.
/// Examples: "model.gguf" -> "model.gguf"; "$(touch x).gguf" -> "'$(touch x).gguf'"; "it's" -> "'it'\''s'"; "" -> "''";
/// "a\nb.gguf" -> "$'a\\nb.gguf'".
std::string shell_word(std::string_view word);

/// Bytes at the end of `text` that begin a UTF-8 sequence not yet complete (0-3): a writer that escapes text in
/// chunks keeps them for the next chunk instead of escaping half a character.
size_t utf8_incomplete_tail(std::string_view text);

} // namespace kvfit
