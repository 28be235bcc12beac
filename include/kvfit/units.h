#pragma once
/// @file units.h
/// Sizes and counts as people write and read them: `--gpu 8GiB`, "0.25 GiB", "52,690,944". Bytes are exact
/// (uint64_t) everywhere inside kvfit; these three functions are the only conversions.

#include <cstdint>
#include <string>
#include <string_view>

namespace kvfit {

/// Parse a size: "8GiB", "6.6GB", "512MiB", "24 GiB", "24G" (= GiB, as llama.cpp and nvidia-smi speak; g too),
/// "1024" bytes. Binary (KiB, MiB, GiB, TiB) and decimal (KB, MB, GB, TB) units are exact, case-insensitive except
/// for a lower-case b, which is a bit ("5Kb": "size '5Kb': a lower-case b is a bit; write 5KB (10^3 B) or 5KiB
/// (2^10 B)"); spaces may stand between the number and the unit. The result is rounded down to a byte. Throws
/// kvfit::error for an empty, negative, non-numeric or over-2^60 value or an unknown unit: "size '8XB': unknown unit
/// 'XB' (use TiB, TB, GiB, GB, MiB, MB, KiB, KB or B; T, G, M, K = TiB, GiB, MiB, KiB)".
uint64_t parse_size(std::string_view text);

/// Parse a size flag's value as people type it: parse_size() with the unit required, since a bare number is ambiguous
/// (GiB? GB? bytes?) and read as bytes it silently plans nothing (`--weights-size 17.5` = 17 B of weights). `flag` is
/// the flag as the user spells it ("--weights-size"); only "0" may go without a unit. Throws kvfit::error in one line:
/// "--weights-size 17.5: no unit; write 17.5GiB (2^30 B) or 17.5GB (10^9 B)", else parse_size's message behind the flag.
/// The flags whose runtime takes bytes (vLLM's --kv-cache-memory-bytes, mlx_lm's --prompt-cache-bytes) use parse_size.
uint64_t parse_size_flag(std::string_view flag, std::string_view text);

/// Format bytes for people: "0.25 GiB", "50.25 MiB", "32.00 KiB", "512 B" (binary units, 2 decimals).
std::string human_bytes(uint64_t bytes);

/// Format an integer with thousands separators: 52690944 -> "52,690,944".
std::string with_commas(uint64_t n);

} // namespace kvfit
