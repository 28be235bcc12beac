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

/// The family keys of a GPU name or alias, as gpu_choices compares them: lower case, leading vendor words dropped,
/// trailing sizes ("80GB", "144G") and form factors ("SXM", "SXM4", "PCIe", "HBM3") dropped, separators removed; and
/// the same without a leading "RTX". "A100 80GB PCIe" -> {"a100"}; "RTX 3060 12GB" -> {"rtx3060", "3060"};
/// "NVIDIA GH200 144G HBM3e" -> {"gh200"}; "" -> {}.
std::vector<std::string> gpu_family_keys(std::string_view name);

/// Parse a GPU table in the data/gpus.csv format (header line, then one row per GPU; fields may be
/// double-quoted, with "" for a quote). `where` names the file in errors.
/// Throws kvfit::error "<where>: line N: <what>" for a wrong header, a wrong field count, an empty name, source,
/// reported_source or (non-Apple) runtime_source, a number that is missing, malformed, zero or negative (compute
/// capability may be empty = 0 only for non-NVIDIA rows), a marketed_gb, reported_mib or runtime_mib that is not a
/// whole number, a runtime_mib on an Apple row (Metal budgets the working set) or missing on another, a runtime_mib
/// above reported_mib, or a name/alias that normalizes to one already used.
std::vector<gpu_info> parse_gpu_csv(std::string_view csv, std::string_view where);

} // namespace kvfit::detail
