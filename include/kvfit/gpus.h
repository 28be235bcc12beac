#pragma once
/// @file gpus.h
/// Known GPUs: a table kept as data (data/gpus.csv, embedded into the library), lookups by name, and the
/// `--gpu` parser that accepts names ("2xH100", "RTX 4090") as well as sizes ("24GiB").
///
/// Every row cites a vendor source or says "spec sheet (not verified)". Memory is the marketed size read
/// as GiB ("8 GB GDDR6" = 8 GiB, "80GB HBM3" = 80 GiB); the driver reports a little less (an H100 80GB shows
/// 81559 MiB of 81920), which the planner's default margin covers. Apple rows give the whole unified memory;
/// macOS lets Metal wire only about 75% of it by default.

#include "kvfit/runtime.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

/// One row of data/gpus.csv, converted to exact units.
struct gpu_info {
    std::string name;                   ///< canonical name: "RTX 4060", "H100 SXM", "M3 Ultra 512GB"
    std::vector<std::string> aliases;   ///< other names that find_gpu accepts: "4060", "geforce rtx 4060"
    std::string vendor;                 ///< "NVIDIA", "AMD", "Apple"
    std::string arch;                   ///< "Ampere", "Ada", "Hopper", "Blackwell", "CDNA3", "Apple M3" ...
    double compute_capability = 0;      ///< CUDA compute capability (8.9 for Ada); 0 = not NVIDIA
    uint64_t memory_bytes = 0;          ///< device (or unified) memory: memory_gib * 2^30
    uint64_t bandwidth_bytes_per_s = 0; ///< peak memory bandwidth: GB/s * 10^9 (716.8 GB/s = 716800000000)
    /// Dense FP16/BF16 tensor rate, FLOP per second, no sparsity. GeForce rows use the FP16-with-FP32-accumulate
    /// figure (half the FP16-accumulate rate on GeForce); Apple rows use the GPU's FP32 rate (no matrix unit).
    double fp16_flops_per_s = 0;
    std::string source;                 ///< vendor URL or whitepaper title and page, or "spec sheet (not verified)"
    std::string notes;                  ///< how a number was obtained when the source does not state it directly
};

/// All rows of data/gpus.csv in file order, parsed once on first use.
/// Throws kvfit::error ("gpus.csv: line N: ...") if the embedded table is malformed: a kvfit bug that
/// tests/test_gpus.cpp catches, never a user error.
const std::vector<gpu_info> & gpu_table();

/// Find a GPU by name or alias. Matching ignores case, spaces, dashes, underscores and dots, and leading
/// vendor words ("NVIDIA", "GeForce", "AMD", "Instinct", "Apple"), so "NVIDIA GeForce RTX 4090", "rtx-4090"
/// and "4090" all find "RTX 4090", and nvidia-smi names such as "NVIDIA A100-SXM4-80GB" work.
/// Defaults for a bare family name (an alias on the chosen row):
///   "H100" -> H100 SXM (80 GiB), "A100" -> A100 80GB SXM, "H200" -> H200 (SXM, 141 GiB),
///   "GH200" -> GH200 (96 GiB HBM3), "RTX 3060" -> 12GB, "RTX 3080" -> 10GB, "RTX 4060 Ti" -> 8GB,
///   "RTX 5060 Ti" -> 16GB, "RTX PRO 6000" -> Workstation Edition. Apple chips have no default: memory
///   differs by 4x between configurations, so "M3 Ultra" is unknown and the error lists the choices.
/// Returns nullptr when nothing matches.
const gpu_info * find_gpu(std::string_view name);

/// Up to `n` canonical names closest to `name`, nearest first: Levenshtein distance between normalized
/// strings (as find_gpu normalizes them), taking each row's best over its name and aliases; ties keep
/// table order. Example: "RTX 9999" -> "RTX 3090", "RTX 4090", "RTX 5090" (distance 3 each).
std::vector<std::string> closest_gpu_names(std::string_view name, size_t n);

/// Parse `--gpu`: comma-separated items, each either a size or a GPU name, with an optional count prefix
/// "<N>x" (1 <= N <= 64, spaces allowed after the x):
///   "24GiB"            -> { "GPU0", 24 GiB }                 (size: see kvfit::parse_size)
///   "2xH100"           -> { "H100 SXM", 80 GiB } x 2
///   "8x H100 SXM"      -> { "H100 SXM", 80 GiB } x 8
///   "RTX 4090,24GiB"   -> { "RTX 4090", 24 GiB }, { "GPU1", 24 GiB }
/// A number with a unit ("24GiB") is a size; anything else is tried as a name first, so "4090" is the RTX 4090 and
/// not 4090 bytes (no name or alias of the table is a number with a unit: tests/test_gpus.cpp). Sized devices are named "GPU<i>"
/// (i = position in the result) as the planner names them.
/// Throws kvfit::error for an empty item, a count outside 1..64, more than 64 devices in all, a zero or
/// malformed size, or an unknown name:
///   "--gpu 'RTX 9999': unknown GPU (closest: RTX 3090, RTX 4090, RTX 5090)"
std::vector<device_spec> parse_gpu_list(std::string_view text);

} // namespace kvfit
