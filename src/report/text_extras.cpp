// The projector, LoRA adapter and host RAM lines of a llama.cpp plan (sections.h), from its detail (docs/json.md:
// projector, adapters, host_ram; src/runtimes/llamacpp/host_ram.cpp writes them).
#include "report/sections.h"

#include "kvfit/units.h"

#include <fmt/format.h>

namespace kvfit::detail {

std::string render_llamacpp_extras(const plan_result & r) {
    const auto & d = r.plan.detail;
    std::string out;
    if (d.contains("projector")) {
        const auto & p = d["projector"];
        const std::string type = str(p, "vision_projector").empty() ? str(p, "audio_projector") : str(p, "vision_projector");
        out += fmt::format("Projector (--mmproj {}): {}, weights {} B ({}) + clip compute {} B ({}{}), flash attention {}"
                           ", {} patches; on {} (in its total below)\n", str(p, "path"), type, with_commas(u64(p, "weights_bytes")),
                           human_bytes(u64(p, "weights_bytes")), with_commas(u64(p, "compute_bytes")),
                           human_bytes(u64(p, "compute_bytes")), flag(p, "compute_modelled") ? "" : ", estimate",
                           flag(p, "flash_attn") ? "on" : "off", with_commas(u64(p, "n_patches")), str(p, "device"));
    }
    if (d.contains("adapters")) {
        for (const auto & a : d["adapters"]) {
            out += fmt::format("LoRA adapter {} (scale {}): {} B ({}), {} tensors, on their base weights' devices (in "
                               "their totals below)\n",
                               str(a, "path"), a["scale"].get<double>(), with_commas(u64(a, "bytes")),
                               human_bytes(u64(a, "bytes")), u64(a, "n_tensors"));
        }
    }
    if (d.contains("host_ram")) {
        const auto & h = d["host_ram"];
        const bool known = flag(h, "known");
        const uint64_t needed = u64(h, "needed_bytes"), total = u64(h, "total_bytes");
        out += fmt::format("\nHost RAM{}: {} needed{}{}{}\n",
                           known ? fmt::format(" ({} given)", human_bytes(u64(h, "capacity_bytes"))) : "",
                           human_bytes(needed),
                           total > needed ? fmt::format(", {} with the prompt cache at its limit", human_bytes(total)) : "",
                           u64(h, "pinned_bytes") ? fmt::format(", {} of it pinned", human_bytes(u64(h, "pinned_bytes"))) : "",
                           !known ? " (pass --ram SIZE for a verdict)"
                                  : flag(h, "fits") ? ": FITS" : flag(h, "prompt_cache_unbounded") ? ": UNCERTAIN (--cache-ram -1)"
                                                                                                   : ": OVER");
        for (const auto & l : h["lines"]) {
            out += fmt::format("  {:<13} {:>12} {:<13} {}\n", str(l, "name"), human_bytes(u64(l, "bytes")),
                               flag(l, "bound") ? "(at most)" : flag(l, "reclaimable") ? "(reclaimable)" : "",
                               str(l, "what"));
        }
    }
    return out;
}

} // namespace kvfit::detail
