// Escaping of text for people (include/kvfit/printable.h).
#include "kvfit/printable.h"

#include <algorithm>

#include <fmt/format.h>

namespace kvfit {
namespace {

// Length of the UTF-8 sequence starting at text[i] (1-4) and its code point; 0 when the bytes are not UTF-8
// (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, or cut short).
size_t utf8_at(std::string_view text, size_t i, char32_t & cp) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char c = b(i);
    cp = c;
    if (c < 0x80) return 1;
    const size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (n == 0) return 0;
    cp = c & (0x7f >> n); // the lead byte's payload: 5, 4 or 3 bits
    if (i + n > text.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((b(i + k) & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (b(i + k) & 0x3f);
    }
    const char32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

bool unprintable_code_point(char32_t cp) {
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

} // namespace

std::string printable(std::string_view text, bool keep_newlines) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c < 0x7f) { // the common case, printable ASCII
            out += char(c);
            ++i;
            continue;
        }
        char32_t cp = 0;
        const size_t n = utf8_at(text, i, cp);
        if (n == 0) {
            out += fmt::format("\\x{:02x}", c);
            ++i;
        } else if (n == 1) {
            const bool keep = c == '\t' || (c == '\n' && keep_newlines);
            out += keep ? std::string(1, char(c)) : fmt::format("\\x{:02x}", c);
            ++i;
        } else {
            out += unprintable_code_point(cp) ? fmt::format("\\u{:04x}", uint32_t(cp)) : std::string(text.substr(i, n));
            i += n;
        }
    }
    return out;
}

size_t utf8_incomplete_tail(std::string_view text) {
    // Walk back over at most 3 continuation bytes to a lead byte whose sequence would run past the end.
    for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
        const unsigned char c = static_cast<unsigned char>(text[text.size() - back]);
        if ((c & 0xc0) == 0x80) continue;            // continuation byte: keep looking for the lead
        const size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        return len > back && c >= 0xc2 && c <= 0xf4 ? back : 0;
    }
    return 0;
}

std::string shell_word(std::string_view word) {
    static constexpr std::string_view safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%";
    if (!word.empty() && word.find_first_not_of(safe) == std::string_view::npos) return std::string(word);
    const auto control = [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; };
    if (std::any_of(word.begin(), word.end(), control)) {
        // ANSI-C quoting (bash, zsh, ksh; POSIX.1-2024 sh): a newline or escape is spelled out, never printed raw
        std::string out = "$'";
        for (const char ch : word) {
            if (ch == '\'' || ch == '\\') out += std::string("\\") + ch;
            else if (ch == '\n') out += "\\n";
            else if (ch == '\t') out += "\\t";
            else if (ch == '\r') out += "\\r";
            else if (control(ch)) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(ch));
            else out += ch;
        }
        return out + "'";
    }
    std::string out = "'";
    for (const char ch : word) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return out + "'";
}

} // namespace kvfit
