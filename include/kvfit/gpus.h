#pragma once
/// @file gpus.h
/// Known GPUs: a table kept as data (data/gpus.csv, embedded into the library), lookups by name, and the
/// `--gpu` parser that accepts names ("2xH100", "RTX 4090") as well as sizes ("24GiB").
///
/// Memory is kept three ways, each with its source (docs/gpus.md): the marketed size ("24 GB"); the total the
/// vendor's tool reports (nvidia-smi memory.total: 23034 MiB on an L4, 81559 MiB on an H100); and the total the
/// runtimes budget from, which CUDA reports (cudaMemGetInfo / torch.cuda.mem_get_info()[1]: 22.05 GiB on an L4,
/// 81082 MiB on an H100; the driver keeps the difference for itself). Plans start from the last. A figure without a
/// published log is an estimate from a sibling card and says so. Apple rows give the whole unified memory; Metal
/// lets the GPU use its working set only (metal.h).
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
    uint32_t marketed_gb = 0;           ///< the size sold, GB as the vendor writes it (Apple's unified-memory GB are GiB)
    /// The total the vendor's tool reports, bytes (MiB x 2^20): nvidia-smi memory.total (NVML), rocm-smi's VRAM
    /// Total Memory, or on a Mac hw.memsize (the unified RAM).
    uint64_t reported_bytes = 0;
    std::string reported_source;        ///< the log it was read from, or "estimate: ..." and the sibling it comes from
    bool reported_estimate = false;     ///< reported_source starts with "estimate:"
    /// The total CUDA (HIP) reports, bytes (MiB x 2^20): cudaMemGetInfo's total = torch.cuda.mem_get_info()[1] =
    /// torch total_memory, which vLLM budgets from (gpu_worker.py: total x gpu_memory_utilization) and which bounds
    /// llama.cpp's free memory; 0 on Apple rows (Metal budgets the working set, metal.h).
    uint64_t runtime_bytes = 0;
    std::string runtime_source;         ///< as reported_source; "" on Apple rows
    bool runtime_estimate = false;      ///< runtime_source starts with "estimate:"
    /// What plans start from: runtime_bytes, or on Apple rows the unified RAM (reported_bytes).
    uint64_t memory_bytes = 0;
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
/// A bare family name is found only when every row of the family has the same marketed memory: "H100" -> H100 SXM
/// (80 GB, as the PCIe card; the 94 GB card is "H100 NVL"), "H200" -> H200. A family sold with several memory sizes
/// ("A100", "V100", "GH200", "RTX 3060", "RTX 3080", "RTX 4060 Ti", "RTX 5060 Ti", "M3 Ultra", "M4 Pro") is not
/// found: gpu_choices lists its rows. Returns nullptr when nothing matches.
const gpu_info * find_gpu(std::string_view name);

/// The rows a family name stands for when they differ in memory, in table order: "A100" -> A100 40GB SXM,
/// A100 80GB SXM, A100 80GB PCIe; "M4 Pro" -> M4 Pro 24GB, 48GB, 64GB. A family is what a name or alias leaves once
/// its trailing sizes ("16GB") and form factors ("SXM", "SXM4", "PCIe") are dropped, with or without a leading
/// "RTX". Empty when `name` is a row's own name or alias, or no such family.
std::vector<const gpu_info *> gpu_choices(std::string_view name);

/// A name read by its family (gpu_family_keys) and the marketed size and form factor it states, for a name no row or
/// alias spells: "RTX 4090 24GB" -> rows {RTX 4090}; "A100 PCIe" -> {A100 40GB PCIe, A100 80GB PCIe} (form pcie);
/// "M5 Max 36GB" -> rows {} (size 36: the family has 48, 64 and 128 GB rows). --gpu takes a single row, refuses no row
/// with the family's names, and several with "name one".
struct gpu_family_match {
    std::vector<const gpu_info *> family; ///< every row of the family, table order; empty: no family
    std::vector<const gpu_info *> rows;   ///< those with the size and form stated
    uint32_t size_gb = 0;                 ///< the size stated ("24GB", "24G"), 0 = none
    std::string form;                     ///< the form factor stated: "sxm", "pcie", "nvl"; "" = none
};
gpu_family_match match_gpu_family(std::string_view name);

/// gpu_memory_text(device_spec) is declared with device_spec in runtime.h (runtimes print it too).

/// Up to `n` canonical names closest to `name`, nearest first: Levenshtein distance between normalized
/// strings (as find_gpu normalizes them), taking each row's best over its name and aliases; ties keep
/// table order. Example: "RTX 9999" -> "RTX 3090", "RTX 4090", "RTX 5090" (distance 3 each).
std::vector<std::string> closest_gpu_names(std::string_view name, size_t n);

/// Parse `--gpu`: comma-separated items, each either a size or a GPU name, with an optional count prefix
/// "<N>x" (1 <= N <= 64, spaces allowed after the x):
///   "24GiB"            -> { "GPU0", 24 GiB }                 (size: see kvfit::parse_size)
///   "2xH100"           -> { "H100 SXM", 81082 MiB } x 2
///   "8x H100 SXM"      -> { "H100 SXM", 81082 MiB } x 8
///   "RTX 4090,24GiB"   -> { "RTX 4090", 24 GiB }, { "GPU1", 24 GiB }
/// A number with a unit ("24GiB") is a size; anything else is tried as a name first, so "4090" is the RTX 4090 and
/// not 4090 bytes (no name or alias of the table is a number with a unit: tests/test_gpus.cpp). Sized devices are named "GPU<i>"
/// (i = position in the result) as the planner names them.
/// A table name gives the row's CUDA total (gpu_info::memory_bytes) with the marketed and nvidia-smi figures beside it.
/// Throws kvfit::error for an empty item, a count outside 1..64, more than 64 devices in all, a zero or
/// malformed size, an unknown name, or a family sold with several memory sizes:
///   "gpu 'RTX 9999': unknown GPU (closest: RTX 3090, RTX 4090, RTX 5090)"
///   "gpu 'A100': sold with several memory sizes, name one: A100 40GB SXM, A100 80GB SXM, A100 80GB PCIe"
std::vector<device_spec> parse_gpu_list(std::string_view text);

} // namespace kvfit
