// `--check` (include/kvfit/report.h: render_check): a verdict on the user's own flags, for any runtime. The words of
// the llama.cpp verdict name its settings (n_ctx, cache types, sequences); other runtimes name their context.
#include "report/sections.h"
#include "kvfit/printable.h"

#include <fmt/format.h>

namespace kvfit {
namespace {

using detail::str;
using detail::u64;

// "n_ctx 65,536 (f16 K / f16 V, 1 sequence)" for llama.cpp; "context 131,072 tokens (8 sequences)" otherwise.
std::string setting_words(const runtime_plan & p) {
    if (p.runtime == "llama.cpp") {
        const auto & d = p.detail;
        const auto & s = d.at("settings");
        const uint64_t n_seq = u64(d, "n_seq");
        return fmt::format("n_ctx {} ({} K / {} V, {} sequence{})", with_commas(u64(d, "n_ctx")), str(s, "cache_type_k"),
                           str(s, "cache_type_v"), n_seq, n_seq == 1 ? "" : "s");
    }
    return fmt::format("context {} tokens ({} sequence{}, {})", with_commas(p.context_tokens), p.sequences,
                       p.sequences == 1 ? "" : "s", p.rules);
}

std::string signed_bytes(int64_t n) { return n < 0 ? "-" + human_bytes(uint64_t(-n)) : human_bytes(uint64_t(n)); }

} // namespace

std::string render_check(const plan_result & r) {
    const runtime_plan & p = r.plan;
    const bool llamacpp = p.runtime == "llama.cpp";
    const char * reserve = llamacpp ? "margin" : "reserve";
    std::string out;
    for (const auto & w : p.warnings) out += fmt::format("warning: {}\n", printable(w, false));
    if (p.fits) {
        out += fmt::format("OK: {} at {} fits:", printable(r.model.name, false), setting_words(p));
        for (const auto & d : p.devices) {
            if (!d.is_host) out += fmt::format(" {} uses {} of {} ({} free after the {});", d.name, human_bytes(d.used_bytes()),
                                               human_bytes(d.capacity_bytes), signed_bytes(d.free_bytes()), reserve);
        }
        if (p.detail.contains("host_ram") && detail::flag(p.detail["host_ram"], "known")) { // llama.cpp's host verdict (--ram)
            const auto & h = p.detail["host_ram"];
            out += fmt::format(" host RAM {} of {} (--ram);", human_bytes(u64(h, "needed_bytes")), human_bytes(u64(h, "capacity_bytes")));
        }
        out.back() = '\n';
        return out;
    }
    out += fmt::format("DOES NOT FIT: {} at {}\n", printable(r.model.name, false), setting_words(p));
    for (const auto & d : p.devices) {
        if (d.is_host || d.fits()) continue;
        const uint64_t budget = d.capacity_bytes > d.reserved_bytes ? d.capacity_bytes - d.reserved_bytes : 0;
        uint64_t sum = 0;
        for (const auto & b : d.buffers) { // in the runtime's allocation order: the first to cross the budget
            sum += b.bytes;
            if (sum <= budget) continue;
            const std::string label(buffer_label(b.name));
            const bool plural = label.ends_with('s'); // "the weights (...) overflow it", "the KV cache (...) overflows it"
            out += fmt::format("  {}: the {} ({}) {} it: {} with the buffers allocated before it, {} "
                               "available ({} minus a {} {}); all buffers together are over by {}\n", d.name,
                               label, human_bytes(b.bytes), plural ? "overflow" : "overflows", human_bytes(sum), human_bytes(budget),
                               human_bytes(d.capacity_bytes), human_bytes(d.reserved_bytes), reserve,
                               human_bytes(uint64_t(-d.free_bytes())));
            break;
        }
    }
    bool gpu_over = false;
    for (const auto & d : p.devices) gpu_over = gpu_over || (!d.is_host && !d.fits());
    if (detail::host_over(p)) { // llama.cpp (host_ram.cpp)
        const auto & h = p.detail["host_ram"];
        out += fmt::format("  host RAM: {} needed, {} given (--ram): the cause is in the warning above\n",
                           human_bytes(u64(h, "needed_bytes")), human_bytes(u64(h, "capacity_bytes")));
    }
    for (const auto & e : p.refusals) out += fmt::format("  {} refuses it: {}\n", r.runtime ? r.runtime->display : p.runtime, e);
    if (llamacpp && gpu_over) {
        out += "  llama.cpp would not refuse this: it moves layers to the CPU (--fit, the default) or fails to allocate, "
               "and a spill to the CPU slows generation sharply.\n";
    }
    if (llamacpp) { // the largest context per cache type, as -c -ctk -ctv
        for (const auto & c : p.max_context) {
            if (!c.all_full_attention && c.allowed && c.context_tokens > 0) {
                out += fmt::format("  fits instead: -c {} -ctk {} -ctv {}\n", c.context_tokens, c.cache_type, c.cache_type);
            }
        }
    } else {
        for (const auto & a : p.alternatives) out += fmt::format("  fits instead: {}\n", a.flags);
    }
    return out;
}

} // namespace kvfit
