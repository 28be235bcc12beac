// The --json document (include/kvfit/report.h: render_json). Keys are stable; schema_version marks changes.
#include "kvfit/report.h"

#include <nlohmann/json.hpp>

namespace kvfit {
namespace {

using json = nlohmann::ordered_json;

json buffers_json(const buffer_set & b) {
    return {{"weights_bytes", b.weights_bytes}, {"kv_bytes", b.kv_bytes},       {"state_bytes", b.state_bytes},
            {"output_bytes", b.output_bytes},   {"compute_bytes", b.compute_bytes}, {"total_bytes", b.total()}};
}

json plan_json(const llamacpp_plan & p) {
    json j;
    j["n_ctx"] = p.ctx.n_ctx;
    j["n_ctx_seq"] = p.ctx.n_ctx_seq;
    j["n_seq"] = p.ctx.n_seq;
    j["n_stream"] = p.ctx.n_stream;
    j["n_batch"] = p.ctx.n_batch;
    j["n_ubatch"] = p.ctx.n_ubatch;
    j["flash_attn"] = p.ctx.flash_attn;
    j["n_gpu_layers"] = p.n_gpu_layers;
    j["kv_caches"] = json::array();
    for (const auto & kv : p.kv) {
        j["kv_caches"].push_back({{"name", kv.name}, {"cells_per_stream", kv.cells_per_stream}, {"n_stream", kv.n_stream},
                                  {"n_layer", kv.n_layer}, {"k_bytes", kv.k_bytes}, {"v_bytes", kv.v_bytes}});
    }
    j["recurrent"] = {{"n_layer", p.rs.n_layer}, {"n_seq", p.rs.n_seq}, {"r_bytes", p.rs.r_bytes}, {"s_bytes", p.rs.s_bytes}};
    j["buffers"] = buffers_json(p.total);
    j["devices"] = json::array();
    for (const auto & d : p.devices) {
        json dj = buffers_json(d.used);
        dj["name"] = d.name;
        dj["is_host"] = d.is_host;
        dj["capacity_bytes"] = d.capacity_bytes;
        dj["margin_bytes"] = d.margin_bytes;
        dj["n_layers"] = d.n_layers;
        dj["has_output"] = d.has_output;
        dj["fits"] = d.fits();
        j["devices"].push_back(dj);
    }
    j["fits"] = p.fits();
    return j;
}

} // namespace

std::string render_json(const report & r) {
    const model_desc & m = r.model;
    json j;
    j["schema_version"] = json_schema_version;
    j["rules"] = llamacpp_release_name(r.settings.release);
    json counts;
    for (layer_kind k : {layer_kind::full, layer_kind::swa, layer_kind::chunked, layer_kind::mla, layer_kind::recurrent,
                         layer_kind::none}) {
        counts[layer_kind_name(k)] = m.count(k);
    }
    j["model"] = {{"name", m.name},          {"architecture", m.architecture}, {"source", m.source},
                  {"n_layer", m.n_layer},    {"n_embd", m.n_embd},             {"n_vocab", m.n_vocab},
                  {"n_ctx_train", m.n_ctx_train}, {"recurrent_kind", recurrent_kind_name(m.rec_kind)},
                  {"layer_counts", counts}};
    j["warnings"] = r.warn;
    j["cache_type_k"] = ggml_traits(r.settings.type_k).name;
    j["cache_type_v"] = ggml_traits(r.settings.type_v).name;
    j["kv_bytes_per_token"] = r.kv_bytes_per_token;
    j["kv_bytes_per_token_if_all_full_attention"] = r.kv_bytes_per_token_if_all_full;
    j["state_bytes_per_sequence"] = r.state_bytes_per_sequence;
    j["contexts"] = json::array();
    for (const auto & c : r.contexts) {
        j["contexts"].push_back({{"n_ctx", c.n_ctx}, {"kv_bytes", c.kv_bytes},
                                 {"kv_bytes_if_all_full_attention", c.kv_bytes_if_all_full}});
    }
    j["parameter_count"] = m.n_params();
    j["weights_bytes"] = m.weights.total_bytes();
    j["weights_exact"] = m.weights.exact;
    j["weights_format"] = m.weights.format;
    if (r.fit) {
        const fit_report & f = *r.fit;
        uint64_t device_bytes = 0;
        for (const auto & g : f.gpus) device_bytes += g.memory_bytes;
        json fj;
        fj["device_bytes"] = device_bytes;
        fj["margin_bytes"] = f.margin_bytes;
        fj["requested_n_ctx"] = r.requested_n_ctx;
        fj["fits"] = r.plan.fits();
        fj["recommended_n_ctx"] = f.recommended_n_ctx;
        json mx;
        for (const auto & c : f.max_n_ctx) {
            mx[std::string(ggml_traits(c.type).name)] = c.allowed ? json(c.max_n_ctx) : json(nullptr);
        }
        fj["max_n_ctx"] = mx;
        fj["max_n_ctx_if_all_full_attention"] = f.max_n_ctx_if_all_full;
        fj["weights_bytes_that_fit"] = f.weights_bytes_that_fit;
        fj["offload"] = {{"n_gpu_layers", f.offload_n_gpu_layers >= 0 ? json(f.offload_n_gpu_layers) : json(nullptr)},
                         {"host_bytes", f.offload_host_bytes},
                         {"n_cpu_moe", f.offload_n_cpu_moe >= 0 ? json(f.offload_n_cpu_moe) : json(nullptr)},
                         {"moe_host_bytes", f.offload_moe_host_bytes}};
        fj["llama_server"] = f.recommended_n_ctx ? json(llama_server_command(r, f.recommended_n_ctx)) : json(nullptr);
        j["fit"] = fj;
    }
    j["requested_n_ctx"] = r.requested_n_ctx;
    const json pj = plan_json(r.plan);
    for (auto it = pj.begin(); it != pj.end(); ++it) j[it.key()] = it.value();
    return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n"; // names from files may not be UTF-8
}

} // namespace kvfit
