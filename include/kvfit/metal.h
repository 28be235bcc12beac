#pragma once
/// @file metal.h
/// What an Apple GPU may use of the unified memory: Metal's recommendedMaxWorkingSetSize, the one rule the MLX,
/// llama.cpp (Metal backend) and Ollama plans share (docs/rules/mlx.md §7 works the logs).
///
/// llama.cpp's Metal device reports the working set as its total and free memory (ggml-metal-device.m
/// ggml_metal_device_get_memory: total = recommendedMaxWorkingSetSize, free = total - currentAllocatedSize), so
/// `-fit` and the layer split budget from it; Ollama's Metal discovery reads the same figure; mlx-lm wires it
/// (generate.py wired_limit) and MLX's allocator sizes its limits from it (allocator.cpp).

#include "kvfit/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvfit {

/// The working set of a Mac with `ram_bytes` of unified memory, bytes.
/// With `wired_limit_mb` > 0 (`sudo sysctl iogpu.wired_limit_mb=N`) it is N MiB exactly, as Metal reports it back
/// (114688 gives 112.00 GiB: antirez/ds4 #893; 12000 and 14000 on a 16 GB M3: AlexsJones/llmfit PR #754).
/// Otherwise macOS 13-15's default, as llama.cpp logs it:
///   ram <= 32 GiB: 2/3 of RAM  (8 GiB -> 5461.33 MiB; 16 GiB -> 10922.67 MiB, llama-cpp-python #687 and llama.cpp's
///                              CI; 24 GiB -> 16384 MiB, an M4 Pro; 32 GiB -> 21845.34 MiB, ollama #434)
///   ram >= 36 GiB: 3/4 of RAM  (36 GiB -> 27648 MiB, an M4 Max on b7690; 64 GiB -> 49152 MiB, llama.cpp #1870;
///                              96 GiB -> 73728 MiB, llama.cpp #3213)
/// No Mac has between 32 and 36 GB. Logs round to 16 KiB pages (a few KiB above these fractions). macOS 26 reports
/// more (0.74 of RAM at 16 and 24 GB, 0.78 at 32, 0.81 at 64, 0.84 at 128): this rule is the smaller figure.
/// Throws kvfit::error "iogpu.wired_limit_mb N exceeds the memory (M MiB)" when N MiB > ram_bytes.
uint64_t metal_working_set_bytes(uint64_t ram_bytes, uint64_t wired_limit_mb = 0);

/// One line on where metal_working_set_bytes' figure comes from, for a plan's notes:
/// "M4 Max 64GB: Metal working set 48.00 GiB = 3/4 of 64.00 GiB unified memory (macOS 13-15's default
/// recommendedMaxWorkingSetSize; macOS 26 reports more; --iogpu-wired-limit-mb N for `sudo sysctl
/// iogpu.wired_limit_mb=N`)", or "... 112.00 GiB from iogpu.wired_limit_mb 114688".
std::string metal_working_set_text(const std::string & device, uint64_t ram_bytes, uint64_t wired_limit_mb = 0);

/// What a launch line starts with to set the working set it was planned at: "sudo sysctl iogpu.wired_limit_mb=N && "
/// (mlx-lm's README "Large Models"; the setting lasts until reboot), or "" for 0 (macOS's default).
std::string iogpu_sysctl_prefix(uint64_t wired_limit_mb);

/// `gpus` with every Apple GPU's memory (the unified RAM) replaced by its working set (memory_is_working_set set),
/// and one line per device in `notes` (metal_working_set_text). Devices of other vendors, sizes given without a
/// vendor, and devices already budgeted pass unchanged. With `wired_limit_mb` > 0 and no Apple GPU to budget, throws
/// kvfit::error "--iogpu-wired-limit-mb N: it sets a Mac's Metal working set, and --gpu names no Mac ..." (the
/// setting would change nothing planned); otherwise throws as metal_working_set_bytes.
std::vector<device_spec> metal_budget(const std::vector<device_spec> & gpus, uint64_t wired_limit_mb,
                                      std::vector<std::string> & notes);

} // namespace kvfit
