#pragma once
// Parsing of data/gpus.csv, exposed for tests/test_gpus.cpp (bad-table cases); use kvfit/gpus.h otherwise.
#include "kvfit/gpus.h"

#include <string>
#include <string_view>
#include <vector>

namespace kvfit::detail {

/// The key find_gpu compares: lower case, leading vendor words dropped ("nvidia", "geforce", "amd",
/// "instinct", "apple"), then spaces, '-', '_' and '.' removed. "NVIDIA GeForce RTX 4090" -> "rtx4090".
std::string normalize_gpu_name(std::string_view name);

/// Parse a GPU table in the data/gpus.csv format (header line, then one row per GPU; fields may be
/// double-quoted, with "" for a quote). `where` names the file in errors.
/// Throws kvfit::error "<where>: line N: <what>" for a wrong header, a wrong field count, an empty name or
/// source, a number that is missing, malformed, zero or negative (compute capability may be empty = 0 only for
/// non-NVIDIA rows), a non-integer memory_gib, or a name/alias that normalizes to one already used.
std::vector<gpu_info> parse_gpu_csv(std::string_view csv, std::string_view where);

} // namespace kvfit::detail
