// `--check` (include/kvfit/report.h: render_check): a verdict on the user's own flags, for any runtime. A runtime
// whose settings read otherwise (llama.cpp: n_ctx, cache types, sequences, its margin) gives its words in
// runtime_plan::words; no runtime is named here and no figure is read from detail.
#include "report/sections.h"
#include "kvfit/printable.h"

#include <fmt/format.h>

namespace kvfit {
namespace {

// What the verdict is for: the runtime's words (runtime_plan::words: "n_ctx 65,536 (f16 K / f16 V, 1 sequence)"), else
// "context 131,072 tokens (8 sequences, <rules>)".
std::string setting_words(const runtime_plan & p) {
    if (!p.words.setting.empty()) return p.words.setting;
    return fmt::format("context {} tokens ({} sequence{}, {})", with_commas(p.context_tokens), p.sequences,
                       p.sequences == 1 ? "" : "s", p.rules);
}

std::string signed_bytes(int64_t n) { return n < 0 ? "-" + human_bytes(uint64_t(-n)) : human_bytes(uint64_t(n)); }

} // namespace

std::string render_check(const plan_result & r) {
    const runtime_plan & p = r.plan;
    const std::string reserve = p.words.reserve.empty() ? "reserve" : p.words.reserve;
    std::string out;
    for (const auto & w : p.warnings) out += fmt::format("warning: {}\n", printable(w, false));
    if (p.fits) {
        out += fmt::format("OK: {} at {} fits:", printable(r.model.name, false), setting_words(p));
        for (const auto & d : p.devices) {
            if (!d.is_host) out += fmt::format(" {} uses {} of {} ({} free after the {});", d.name, human_bytes(d.used_bytes()),
                                               human_bytes(d.capacity_bytes), signed_bytes(d.free_bytes()), reserve);
        }
        if (p.host_ram && p.host_ram->known) { // the runtime's host verdict (--ram)
            out += fmt::format(" host RAM {} of {} (--ram);", human_bytes(p.host_ram->needed_bytes),
                               human_bytes(p.host_ram->capacity_bytes));
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
    if (p.host_ram && p.host_ram->over) { // the runtime's host verdict (runtime_plan::host_ram)
        out += fmt::format("  host RAM: {} needed, {} given (--ram): the cause is in the warning above\n",
                           human_bytes(p.host_ram->needed_bytes), human_bytes(p.host_ram->capacity_bytes));
    }
    for (const auto & e : p.refusals) out += fmt::format("  {} refuses it: {}\n", r.runtime ? r.runtime->display : p.runtime, e);
    if (gpu_over && !p.words.when_over.empty()) out += fmt::format("  {}\n", p.words.when_over);
    if (p.words.fits_instead_by_cache_type && r.runtime) {
        // the largest context per cache type, with the runtime's flags (the registry's spellings: -c -ctk -ctv)
        const runtime_info & rt = *r.runtime;
        const std::string ctk = flag_spelling(rt, rt.cache_type_k);
        const std::string ctv = rt.cache_type_v.empty() ? "" : flag_spelling(rt, rt.cache_type_v);
        for (const auto & c : p.max_context) {
            if (!c.all_full_attention && c.allowed && c.context_tokens > 0) {
                out += fmt::format("  fits instead: {} {} {} {}{}\n", rt.context.spelled, c.context_tokens, ctk, c.cache_type,
                                   ctv.empty() ? "" : fmt::format(" {} {}", ctv, c.cache_type));
            }
        }
    } else {
        for (const auto & a : p.alternatives) out += fmt::format("  fits instead: {}\n", a.flags);
    }
    return out;
}

} // namespace kvfit
