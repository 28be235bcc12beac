#pragma once
/// @file search.h
/// The one monotone search of kvfit. Every "largest value that fits" (llama.cpp's n_ctx per cache type, the best
/// -ngl, llama-server's --fit as Ollama runs it, vLLM's max_model_len check and auto-fit) and every "smallest value
/// that fits" (--n-cpu-moe) calls one of these two functions; nothing else in kvfit bisects.

#include <cstdint>
#include <functional>
#include <optional>

namespace kvfit {

/// Largest v on the grid lo, lo + step, lo + 2 step, ... <= hi with fits(v) true, assuming fits is monotone (true up
/// to some value, false above it). std::nullopt when the grid is empty (hi < lo) or fits(lo) is false.
/// Probes the top of the grid (when it fits, that is the answer: one call, the common case of a model whose training
/// context fits), then lo, then bisects between the largest value known to fit and the smallest known not to
/// (mid = lo + (hi - lo) / step / 2 * step): at most 2 + log2((hi - lo) / step) calls.
/// Example: lo 256, hi 262144, step 256, fits(v) = v <= 32768: probes 262144, 256, 131072, 65536, 32768, 49152,
/// 40960, 36864, 34816, 33792, 33280, 33024 -> 32768. `step` must be at least 1 (0 is a kvfit bug: asserted).
std::optional<uint64_t> largest_fitting(uint64_t lo, uint64_t hi, uint64_t step,
                                        const std::function<bool(uint64_t)> & fits);

/// Smallest v on the same grid with fits(v) true, assuming fits is false up to some value and true above it (more of
/// the setting needs less memory, as --n-cpu-moe). std::nullopt when the grid is empty or fits(top of the grid) is
/// false. Probes the top, then lo, then bisects. Example: lo 0, hi 48, step 1, fits(v) = v >= 13 -> 13.
std::optional<uint64_t> smallest_fitting(uint64_t lo, uint64_t hi, uint64_t step,
                                         const std::function<bool(uint64_t)> & fits);

} // namespace kvfit
