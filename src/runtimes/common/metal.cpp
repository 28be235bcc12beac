// Metal's working set (include/kvfit/metal.h): the one budget of an Apple GPU, shared by the MLX, llama.cpp and
// Ollama plans. The logs behind the rule are in docs/rules/mlx.md §7.
#include "kvfit/metal.h"

#include "core/util.h"
#include "kvfit/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace kvfit {

namespace {

using detail::GiB;
using detail::MiB;

} // namespace

uint64_t metal_working_set_bytes(uint64_t ram_bytes, uint64_t wired_limit_mb) {
    if (wired_limit_mb > 0) {
        if (wired_limit_mb > ram_bytes / MiB) {
            throw error(fmt::format("iogpu.wired_limit_mb {} exceeds the memory ({} MiB)", wired_limit_mb, ram_bytes / MiB));
        }
        return wired_limit_mb * MiB;
    }
    // macOS 13-15's default recommendedMaxWorkingSetSize: 2/3 up to 32 GB (32 GB logs 21845.34 MiB), 3/4 from 36 GB
    // (a 36 GB M4 Max logs 28991.03 MB = 27648 MiB)
    return ram_bytes <= 32 * GiB ? ram_bytes / 3 * 2 : ram_bytes / 4 * 3;
}

std::string metal_working_set_text(const std::string & device, uint64_t ram_bytes, uint64_t wired_limit_mb) {
    const uint64_t ws = metal_working_set_bytes(ram_bytes, wired_limit_mb);
    if (wired_limit_mb > 0) {
        return fmt::format("{}: Metal working set {} from iogpu.wired_limit_mb {} (of {} unified memory)", device,
                           detail::gib_text(ws), wired_limit_mb, detail::gib_text(ram_bytes));
    }
    return fmt::format("{}: Metal working set {} = {} of {} unified memory (macOS 13-15's default "
                       "recommendedMaxWorkingSetSize; macOS 26 reports more; --iogpu-wired-limit-mb N for `sudo sysctl "
                       "iogpu.wired_limit_mb=N`)", device, detail::gib_text(ws), ram_bytes <= 32 * GiB ? "2/3" : "3/4",
                       detail::gib_text(ram_bytes));
}

std::string iogpu_sysctl_prefix(uint64_t wired_limit_mb) {
    return wired_limit_mb ? fmt::format("sudo sysctl iogpu.wired_limit_mb={} && ", wired_limit_mb) : std::string();
}

std::vector<device_spec> metal_budget(const std::vector<device_spec> & gpus, uint64_t wired_limit_mb,
                                      std::vector<std::string> & notes) {
    std::vector<device_spec> out = gpus;
    bool apple = false;
    for (size_t i = 0; i < out.size(); ++i) {
        device_spec & d = out[i];
        if (d.vendor != "Apple") continue;
        apple = true;
        if (d.memory_is_working_set) continue;
        // one line per distinct device, not one per GPU of a list of identical Macs
        if (i == 0 || out[i - 1].name != d.name) notes.push_back(metal_working_set_text(d.name, d.memory_bytes, wired_limit_mb));
        d.memory_bytes = metal_working_set_bytes(d.memory_bytes, wired_limit_mb);
        d.memory_is_working_set = true;
    }
    // the setting changes a Mac's budget only: planned beside an NVIDIA card or a size (already the budget) it would
    // be dropped, so it is refused by name rather than ignored
    if (wired_limit_mb > 0 && !apple) {
        const bool sized = std::any_of(gpus.begin(), gpus.end(), [](const device_spec & d) { return d.vendor.empty(); });
        throw error(fmt::format("--iogpu-wired-limit-mb {}: it sets a Mac's Metal working set, and --gpu names no Mac: "
                                "name one (e.g. --gpu \"M4 Max 64GB\") or drop the flag{}", wired_limit_mb,
                                sized ? " (a size given to --gpu is taken as the working set itself)" : ""));
    }
    return out;
}

} // namespace kvfit
