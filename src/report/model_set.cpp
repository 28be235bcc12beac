// A set of models as text and JSON (include/kvfit/model_set.h). Formats only: every figure comes from set_result.
#include "kvfit/model_set.h"

#include "kvfit/printable.h"
#include "kvfit/report.h"
#include "kvfit/units.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvfit {

std::string render_set_text(const set_result & s) {
    std::string out = fmt::format("Set of {} models under {}: {}\n", s.plans.size(), s.runtime->display, s.colocation);
    for (size_t i = 0; i < s.plans.size(); ++i) {
        const plan_result & r = s.plans[i];
        const runtime_plan & p = r.plan;
        std::string where;
        for (size_t g = 0; g < s.devices.size(); ++g) {
            if (s.devices[g].member_bytes[i] == 0) continue;
            where += fmt::format("{}{} on {}", where.empty() ? "" : ", ", human_bytes(s.devices[g].member_bytes[i]),
                                 s.devices[g].name);
        }
        out += fmt::format("  {}. {}{}: context {} tokens, {} sequence{}; {}; {}{}\n", i + 1, printable(r.model.name, false),
                           s.weights.empty() ? "" : fmt::format(" (weight {})", set_weight_text(s.weights[i])),
                           with_commas(p.context_tokens), p.sequences, p.sequences == 1 ? "" : "s",
                           where.empty() ? "nothing on the GPUs" : where, p.fits ? "fits" : "does not fit",
                           s.fits_alone[i] == p.fits ? "" : s.fits_alone[i] ? " (fits alone)" : " (does not fit alone)");
        for (const auto & x : p.refusals) out += fmt::format("     refused: {}\n", printable(x, false));
        for (const auto & x : p.warnings) out += fmt::format("     warning: {}\n", printable(x, false));
        for (const auto & x : p.assumptions) out += fmt::format("     assumption: {}\n", printable(x, false));
    }
    for (const auto & d : s.devices) {
        std::string parts;
        for (size_t i = 0; i < d.member_bytes.size(); ++i) {
            parts += fmt::format("{}{}", i == 0 ? "" : " + ", human_bytes(d.member_bytes[i]));
        }
        out += fmt::format("  {}: {} = {} used, {} kept free, of {}: {} {}\n", printable(d.name, false), parts,
                           human_bytes(d.used_bytes), human_bytes(d.reserved_bytes), human_bytes(d.capacity_bytes),
                           human_bytes(uint64_t(d.fits() ? d.free_bytes() : -d.free_bytes())), d.fits() ? "left" : "short");
    }
    const set_host & h = s.host;
    if (h.known() || h.used_bytes > 0) {
        std::string parts;
        uint64_t shared = 0;
        for (size_t i = 0; i < h.member_bytes.size(); ++i) {
            parts += fmt::format("{}{}", i == 0 ? "" : " + ", human_bytes(h.member_bytes[i]));
            shared += h.shared_bytes[i];
        }
        out += fmt::format("  host RAM: {}{} = {}{}\n", parts,
                           shared ? fmt::format(" - {} mapped by another model too (one page cache per file)", human_bytes(shared)) : "",
                           human_bytes(h.used_bytes),
                           !h.known() ? std::string(" (pass --ram SIZE for a verdict)")
                                      : fmt::format(" of {} (--ram): {} {}", human_bytes(h.capacity_bytes),
                                                    human_bytes(h.fits() ? h.capacity_bytes - h.used_bytes : h.used_bytes - h.capacity_bytes),
                                                    h.fits() ? "left" : "short"));
    }
    for (const auto & w : s.warnings) out += fmt::format("  warning: {}\n", printable(w, false));
    out += fmt::format("Verdict: the {} models {}\n", s.plans.size(), s.fits ? "fit together" : "do not fit together");
    for (const auto & x : s.refusals) out += fmt::format("  - {}\n", printable(x, false));
    std::string proportion;
    for (size_t i = 0; i < s.weights.size(); ++i) proportion += (i == 0 ? "" : " : ") + set_weight_text(s.weights[i]);
    const auto per_model = [&](const set_alternative & a) {
        std::string per;
        for (size_t i = 0; i < a.flags.size(); ++i) {
            per += fmt::format("{}{} {}", i == 0 ? "" : "; ", printable(s.plans[i].model.name, false), a.flags[i]);
        }
        // the search stopped at a model's training context, not at the memory
        return a.capped ? per + " (the search stops at a model's training context: more may fit)" : per;
    };
    if (s.fits && !s.weights.empty()) { // the weighted solve is what was asked, fitting or not
        bool found = false;
        for (const auto & a : s.alternatives) {
            if (a.kind != "weighted_context") continue;
            found = true;
            out += fmt::format("  Largest contexts in proportion {} that fit together: {}\n", proportion, per_model(a));
        }
        if (!found) out += fmt::format("  No contexts in proportion {} fit together within each model's range.\n", proportion);
    }
    if (!s.fits) {
        if (s.alternatives.empty()) {
            std::string tried;
            for (size_t i = 0; i < s.tried.size(); ++i) tried += (i == 0 ? "" : "; ") + s.tried[i];
            out += s.tried.empty() ? std::string("  Nothing found that fits together.\n")
                                   : fmt::format("  Nothing found that fits together (tried: {}).\n", tried);
        }
        for (const auto & a : s.alternatives) {
            out += fmt::format("  Fits together: {}: {}\n",
                               a.kind == "equal_context" ? "the largest equal context"
                               : a.kind == "weighted_context" ? fmt::format("the largest contexts in proportion {}", proportion)
                               : a.kind == "utilization_split" ? "split the GPU"
                               : a.kind == "gpu_assignment" ? "one GPU per model, each process shown only its own"
                                                            : "each server's smallest static fraction, in start order",
                               per_model(a));
        }
    }
    return out;
}

std::string render_set_json(const set_result & s) {
    using json = nlohmann::ordered_json;
    json j;
    j["schema_version"] = json_schema_version;
    j["set"] = true;
    j["runtime"] = s.runtime->name;
    j["colocation"] = s.colocation;
    j["fits"] = s.fits;
    j["refusals"] = s.refusals;
    j["warnings"] = s.warnings;
    j["models"] = s.specs;
    j["fits_alone"] = s.fits_alone;
    j["devices"] = json::array();
    for (const auto & d : s.devices) {
        j["devices"].push_back({{"name", d.name}, {"capacity_bytes", d.capacity_bytes}, {"reserved_bytes", d.reserved_bytes},
                                {"member_bytes", d.member_bytes}, {"used_bytes", d.used_bytes},
                                {"free_bytes", d.free_bytes()}, {"fits", d.fits()}});
    }
    j["host"] = {{"member_bytes", s.host.member_bytes}, {"shared_bytes", s.host.shared_bytes},
                 {"used_bytes", s.host.used_bytes}, {"with_cache_bytes", s.host.with_cache_bytes},
                 {"capacity_bytes", s.host.capacity_bytes}, {"known", s.host.known()}, {"fits", s.host.fits()}};
    j["weights"] = nullptr;
    if (!s.weights.empty()) {
        j["weights"] = json::array();
        for (uint32_t w : s.weights) j["weights"].push_back(double(w) / set_weight_one);
    }
    j["alternatives"] = json::array();
    for (const auto & a : s.alternatives) {
        json x = {{"kind", a.kind}, {"flags", a.flags}, {"values", a.values}};
        if (a.kind == "weighted_context") x["per_weight"] = a.per_weight;
        if (a.kind == "equal_context" || a.kind == "weighted_context") x["capped"] = a.capped;
        j["alternatives"].push_back(std::move(x));
    }
    j["tried"] = s.tried;
    j["plans"] = json::array();
    for (const auto & r : s.plans) j["plans"].push_back(json::parse(render_json(r)));
    return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

} // namespace kvfit
