#pragma once
/// @file detect.h
/// `--gpu auto`: the GPUs present in this machine and their free memory.
///
/// Tried in order, the first that answers wins:
///  1. NVML, loaded at run time with dlopen("libnvidia-ml.so.1") (no link-time dependency): nvmlInit_v2,
///     nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetName, nvmlDeviceGetMemoryInfo,
///     nvmlShutdown. Skipped when the environment sets KVFIT_NO_NVML=1 (tests).
///  2. `nvidia-smi --query-gpu=name,memory.total,memory.free --format=csv,noheader,nounits` (MiB).
///  3. `rocm-smi --showproductname --showmeminfo vram --json` (bytes).
/// With none, the machine has no GPU kvfit can see and plans run on the CPU.
///
/// Guards: each tool runs without a shell, with a deadline ($KVFIT_TOOL_TIMEOUT seconds, default 10) and at most
/// 1 MiB of output; past either its process group is killed. Figures are checked: a device with no memory, more
/// than max_device_memory_bytes, or more free than total memory (a "-1", an overflow) is refused, not planned for.

#include "kvfit/runtime.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

/// The most memory one device may report: 4 TiB, 14x the largest GPU of 2026 (288 GB); more is a driver tool's
/// garbage, not a GPU.
inline constexpr uint64_t max_device_memory_bytes = 4ull << 40;

/// The most GPUs a detection may list.
inline constexpr size_t max_detected_gpus = 256;

/// One GPU as the driver reports it.
struct detected_gpu {
    std::string name;          ///< driver name: "NVIDIA GeForce RTX 4060", "AMD Radeon RX 7900 XTX"
    uint64_t total_bytes = 0;  ///< device memory
    uint64_t free_bytes = 0;   ///< memory free now (other processes and the display take the rest)
};

/// What detection found and how.
struct gpu_detection {
    std::vector<detected_gpu> gpus;  ///< in driver order (CUDA0, CUDA1, ...)
    std::string method;              ///< "nvml", "nvidia-smi", "rocm-smi" or "none"
    std::vector<std::string> notes;  ///< why earlier methods were skipped ("libnvidia-ml.so.1 not found")
    /// Answers refused: a tool that hung or printed without end, figures that make no sense. One line each:
    /// "nvidia-smi: no answer within 10 s (killed)", "nvidia-smi: line 1: memory.free 9000 MiB exceeds memory.total
    /// 8188 MiB". A detection with no GPU and a refusal must not be read as "this machine has no GPU".
    std::vector<std::string> refused;
};

/// Detect the GPUs (see the file comment for the order). Never throws: a failing method is a note.
gpu_detection detect_gpus();

/// Parse nvidia-smi's CSV (name, memory.total MiB, memory.free MiB per line, no header, no units):
///   "NVIDIA GeForce RTX 4060, 8188, 7771" -> { "NVIDIA GeForce RTX 4060", 8188 MiB, 7771 MiB }.
/// Names may contain commas only inside quotes; blank lines are skipped.
/// Throws kvfit::error "nvidia-smi: line N: ..." for a line without three fields, memory that is not a whole number
/// ("-1", "[N/A]"), zero or over max_device_memory_bytes, free memory over the total, or more than max_detected_gpus.
std::vector<detected_gpu> parse_nvidia_smi_csv(std::string_view text);

/// Parse rocm-smi's JSON: one object per "cardN" with "VRAM Total Memory (B)", "VRAM Total Used Memory (B)"
/// and a name from "Card Series" (else "Card SKU", else "AMD GPU cardN"). Cards without VRAM keys are
/// skipped. Throws kvfit::error "rocm-smi: ..." for text that is not a JSON object and for figures refused as
/// parse_nvidia_smi_csv refuses them.
std::vector<detected_gpu> parse_rocm_smi_json(std::string_view text);

/// Devices for the planner: one per detected GPU with its FREE memory (what llama.cpp can allocate, and what
/// llama.cpp's own split uses). The name is the GPU table's canonical name when find_gpu knows the driver
/// name (so the speed model finds its bandwidth), else the driver name.
std::vector<device_spec> devices_from_detection(const gpu_detection & d);

/// One line per GPU for people: "GPU0: NVIDIA GeForce RTX 4060 (RTX 4060), 7.59 GiB free of 8.00 GiB, via nvidia-smi";
/// "no GPU found (...notes...): planning for the CPU" when none.
std::string describe_detection(const gpu_detection & d);

} // namespace kvfit
