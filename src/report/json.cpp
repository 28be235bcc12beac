// The --json document, schema_version 2 (include/kvfit/report.h: render_json; every field in docs/json.md). One
// document for every runtime: the runtime_plan's common fields, then its runtime-specific detail.
#include "kvfit/gpus.h"
#include "kvfit/report.h"

#include <nlohmann/json.hpp>

namespace kvfit {
namespace {

using json = nlohmann::ordered_json;

json model_json(const model_desc & m) {
    json counts;
    for (layer_kind k : {layer_kind::full, layer_kind::swa, layer_kind::chunked, layer_kind::mla, layer_kind::recurrent,
                         layer_kind::none}) {
        counts[layer_kind_name(k)] = m.count(k);
    }
    return {{"name", m.name},
            {"architecture", m.architecture},
            {"source", m.source},
            {"n_layer", m.n_layer},
            {"n_layer_mtp", m.n_layer_mtp},
            {"n_layer_mtp_apart", m.n_layer_mtp_apart},
            {"n_embd", m.n_embd},
            {"n_vocab", m.n_vocab},
            {"n_ctx_train", m.n_ctx_train},
            {"recurrent_kind", recurrent_kind_name(m.rec_kind)},
            {"layer_counts", counts},
            {"dtype", m.dtype},
            {"ssm_dtype", m.ssm_dtype},
            {"parameter_count", m.n_params()},
            {"weights_bytes", m.weights.total_bytes()},
            {"weights_exact", m.weights.exact},
            {"weights_format", m.weights.format}};
}

json optional_json(const std::optional<uint64_t> & v) { return v ? json(*v) : json(nullptr); }

// Every buffer name's bytes over all devices, "<name>_bytes", in first-seen order, then total_bytes.
json totals_json(const runtime_plan & p) {
    json t = json::object();
    uint64_t total = 0;
    for (const auto & d : p.devices) {
        for (const auto & b : d.buffers) {
            const std::string key = b.name + "_bytes";
            t[key] = (t.contains(key) ? t[key].get<uint64_t>() : 0) + b.bytes;
            total += b.bytes;
        }
    }
    t["total_bytes"] = total;
    return t;
}

json device_json(const device_plan & d) {
    json buffers = json::array();
    for (const auto & b : d.buffers) {
        buffers.push_back({{"name", b.name}, {"bytes", b.bytes}, {"estimate", b.estimate}, {"what", b.what}});
        if (b.has_range) buffers.back()["range"] = {b.range_lo, b.range_hi};
    }
    return {{"name", d.name},
            {"is_host", d.is_host},
            {"capacity_bytes", d.capacity_bytes},
            {"reserved_bytes", d.reserved_bytes},
            {"n_layers", d.n_layers},
            {"buffers", buffers},
            {"used_bytes", d.used_bytes()},
            {"free_bytes", d.is_host ? json(nullptr) : json(d.free_bytes())},
            {"fits", d.fits()}};
}

} // namespace

std::string render_json(const plan_result & r) {
    const runtime_plan & p = r.plan;
    json j;
    j["schema_version"] = json_schema_version;
    j["runtime"] = p.runtime;
    j["rules"] = p.rules;
    j["model"] = model_json(r.model);
    j["gpus"] = json::array();
    for (const auto & g : r.target.gpus) {
        j["gpus"].push_back({{"name", g.name}, {"memory_bytes", g.memory_bytes}, {"compute_capability", g.compute_capability},
                             {"marketed_gb", g.marketed_gb}, {"reported_bytes", g.reported_bytes},
                             {"memory_estimate", g.memory_estimate}, {"memory", gpu_memory_text(g)}});
    }
    j["context_tokens"] = p.context_tokens;
    j["sequences"] = p.sequences;
    j["fits"] = p.fits;
    j["starts"] = p.starts;
    j["refusals"] = p.refusals;
    j["warnings"] = p.warnings;
    j["notes"] = p.notes;
    if (!p.assumptions.empty()) j["assumptions"] = p.assumptions; // additive: only where a plan rests on estimates
    j["kv_bytes_per_token"] = optional_json(p.kv_bytes_per_token);
    j["state_bytes_per_sequence"] = optional_json(p.state_bytes_per_sequence);
    j["totals"] = totals_json(p);
    j["devices"] = json::array();
    for (const auto & d : p.devices) j["devices"].push_back(device_json(d));
    j["caches"] = json::array();
    for (const auto & c : p.caches) {
        j["caches"].push_back({{"name", c.name}, {"cells_per_stream", c.cells_per_stream}, {"n_stream", c.n_stream},
                               {"n_layer", c.n_layer}, {"k_bytes", c.k_bytes}, {"v_bytes", c.v_bytes}});
    }
    j["max_context"] = json::array();
    for (const auto & c : p.max_context) {
        j["max_context"].push_back({{"cache_type", c.cache_type}, {"all_full_attention", c.all_full_attention},
                                    {"allowed", c.allowed}, {"refusal", c.refusal},
                                    {"context_tokens", c.allowed ? json(c.context_tokens) : json(nullptr)},
                                    {"capped", c.capped}});
    }
    j["alternatives"] = json::array();
    for (const auto & a : p.alternatives) {
        j["alternatives"].push_back({{"knob", a.knob}, {"value", a.value}, {"cache_type", a.cache_type}, {"flags", a.flags},
                                     {"context_tokens", a.context_tokens}, {"host_bytes", a.host_bytes}});
    }
    j["launch"] = p.launch;
    j["detail"] = p.detail;
    return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n"; // names from files may not be UTF-8
}

} // namespace kvfit
