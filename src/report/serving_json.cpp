// The serving --json document (include/kvfit/serving_report.h: render_serving_json). runtime_plan holds the
// keys every runtime shares; runtime-specific keys follow them. Keys are stable; the schema version marks changes.
#include "kvfit/serving_report.h"

#include <nlohmann/json.hpp>

namespace kvfit {
namespace {

using json = nlohmann::ordered_json;

json vllm_json(const vllm_plan & p) {
    const vllm_settings & s = p.settings;
    json j;
    j["runtime"] = "vllm";
    j["version_rules"] = vllm_rules_name(s.rules);
    j["block_size"] = p.block_size;
    j["page_bytes"] = p.page_bytes;
    j["num_gpu_blocks"] = p.num_gpu_blocks;
    j["per_request_blocks"] = p.per_request_blocks;
    j["max_concurrency"] = p.max_concurrency;
    j["kv_cache_tokens"] = p.kv_cache_tokens;
    j["kv_cache_tokens_v2025"] = p.kv_cache_tokens_v2025;
    j["available_kv_bytes"] = p.available_kv_bytes;
    j["max_model_len"] = p.max_model_len;
    j["max_model_len_fit"] = p.max_model_len_fit;
    j["need_bytes"] = p.need_bytes;
    j["per_rank"] = json::array();
    for (const auto & k : p.ranks) {
        j["per_rank"].push_back({{"pp_rank", k.pp_rank}, {"first_layer", k.first_layer}, {"n_layer", k.n_layer},
                                 {"total_bytes", k.total_bytes}, {"requested_bytes", k.requested_bytes},
                                 {"weights_bytes", k.weights_bytes}, {"activation_bytes", k.activation_bytes},
                                 {"non_torch_bytes", k.non_torch_bytes}, {"cudagraph_bytes", k.cudagraph_bytes},
                                 {"available_kv_bytes", k.available_kv_bytes}, {"n_tensors", k.n_tensors},
                                 {"num_blocks", k.num_blocks}});
    }
    j["settings"] = {{"gpu_memory_utilization", s.gpu_memory_utilization}, {"kv_cache_memory_bytes", s.kv_cache_memory_bytes},
                     {"kv_cache_dtype", s.kv_cache_dtype}, {"max_num_seqs", s.max_num_seqs},
                     {"max_num_batched_tokens", s.max_num_batched_tokens}, {"enable_prefix_caching", s.enable_prefix_caching},
                     {"mamba_cache_mode", mamba_cache_mode_name(s.mamba_mode)}, {"enforce_eager", s.enforce_eager},
                     {"tensor_parallel_size", s.tp}, {"pipeline_parallel_size", s.pp}, {"data_parallel_size", s.dp},
                     {"decode_context_parallel_size", s.dcp}};
    j["n_head_kv_per_rank"] = p.n_head_kv_rank;
    j["attention_bytes_per_token"] = p.attn_bytes_per_token;
    j["mamba_state_bytes"] = p.mamba_state_bytes;
    j["mamba_padding_percent"] = p.mamba_padding_pct;
    j["group_size"] = p.group_size;
    j["block_bytes"] = p.block_bytes;
    j["groups"] = json::array();
    for (const auto & g : p.groups) {
        j["groups"].push_back({{"kind", g.kind}, {"n_layer", g.n_layer}, {"n_padding", g.n_padding},
                               {"block_size", g.block_size}, {"per_request_blocks", g.per_request_blocks}});
    }
    j["errors"] = p.errors;
    j["warnings"] = p.warnings;
    j["notes"] = p.notes;
    return j;
}

json sglang_json(const sglang_plan & p) {
    json j;
    j["runtime"] = "sglang";
    j["version_rules"] = "SGLang pool_configurator.py (2026 main)";
    j["block_size"] = p.settings.page_size;
    j["page_bytes"] = p.cell_bytes * p.settings.page_size;
    j["num_gpu_blocks"] = p.max_total_num_tokens / p.settings.page_size;
    j["per_request_blocks"] = (p.context_length + p.settings.page_size - 1) / p.settings.page_size;
    j["max_concurrency"] = p.context_length ? double(p.max_total_num_tokens) / double(p.context_length) : 0.0;
    j["kv_cache_tokens"] = p.max_total_num_tokens;
    j["available_kv_bytes"] = p.kv_pool_bytes;
    j["max_model_len_fit"] = std::min(p.max_total_num_tokens, p.context_length);
    j["per_rank"] = json::array({{{"tp_rank", "all"}, {"weights_bytes", p.weights_bytes}, {"rest_bytes", p.rest_bytes},
                                  {"kv_pool_bytes", p.kv_pool_bytes}}});
    j["mem_fraction_static"] = p.settings.mem_fraction_static;
    j["cell_bytes"] = p.cell_bytes;
    j["mamba_bytes_per_request"] = p.mamba_bytes_per_request;
    j["max_mamba_cache_size"] = p.mamba_slots;
    j["max_running_requests"] = p.max_running_requests;
    j["errors"] = p.errors;
    j["warnings"] = p.warnings;
    j["notes"] = p.notes;
    return j;
}

json ollama_json(const ollama_plan & p) {
    const llamacpp_plan & q = p.plan;
    json j;
    j["runtime"] = "ollama";
    j["version_rules"] = "Ollama fb30760 (llama-server)";
    j["block_size"] = nullptr;
    j["page_bytes"] = nullptr;
    j["num_gpu_blocks"] = nullptr;
    j["per_request_blocks"] = nullptr;
    j["max_concurrency"] = p.num_parallel;
    j["kv_cache_tokens"] = q.ctx.n_ctx;
    j["available_kv_bytes"] = q.total.kv_bytes;
    j["max_model_len_fit"] = q.ctx.n_ctx_seq;
    j["per_rank"] = json::array();
    for (const auto & d : q.devices) {
        j["per_rank"].push_back({{"name", d.name}, {"is_host", d.is_host}, {"capacity_bytes", d.capacity_bytes},
                                 {"margin_bytes", d.margin_bytes}, {"n_layers", d.n_layers},
                                 {"weights_bytes", d.used.weights_bytes}, {"kv_bytes", d.used.kv_bytes},
                                 {"state_bytes", d.used.state_bytes}, {"compute_bytes", d.used.compute_bytes},
                                 {"total_bytes", d.used.total()}, {"fits", d.fits()}});
    }
    j["num_ctx"] = p.num_ctx;
    j["num_ctx_from"] = p.num_ctx_from;
    j["num_parallel"] = p.num_parallel;
    j["parallel_forced"] = p.parallel_forced;
    j["cache_type"] = ggml_traits(p.cache_type).name;
    j["flash_attention"] = p.flash_attn == flash_attn_mode::on ? "on" : p.flash_attn == flash_attn_mode::off ? "off" : "auto";
    j["fit_target_bytes"] = p.fit_target_bytes;
    j["mmproj_offload"] = p.mmproj_offload;
    j["n_gpu_layers"] = q.n_gpu_layers;
    j["all_on_gpu"] = p.all_on_gpu;
    j["llama_server"] = {{"n_ctx", q.ctx.n_ctx}, {"n_ctx_seq", q.ctx.n_ctx_seq}, {"n_seq", q.ctx.n_seq},
                         {"weights_bytes", q.total.weights_bytes}, {"kv_bytes", q.total.kv_bytes},
                         {"state_bytes", q.total.state_bytes}, {"compute_bytes", q.total.compute_bytes},
                         {"output_bytes", q.total.output_bytes}};
    j["warnings"] = p.warnings;
    j["notes"] = p.notes;
    return j;
}

} // namespace

std::string render_serving_json(const serving_report & r) {
    const model_desc & m = r.model;
    json j;
    j["schema_version"] = serving_json_schema_version;
    j["runtime"] = r.runtime();
    j["model"] = {{"name", m.name}, {"architecture", m.architecture}, {"source", m.source}, {"n_layer", m.n_layer},
                  {"dtype", m.dtype}, {"ssm_dtype", m.ssm_dtype}, {"n_ctx_train", m.n_ctx_train},
                  {"weights_bytes", m.weights.total_bytes()}, {"weights_format", m.weights.format}};
    j["gpus"] = json::array();
    for (const auto & g : r.gpus) j["gpus"].push_back({{"name", g.name}, {"memory_bytes", g.memory_bytes}});
    j["nodes"] = r.nodes;
    j["compute_capability"] = r.compute_capability;
    if (r.vllm) j["runtime_plan"] = vllm_json(*r.vllm);
    if (r.sglang) j["runtime_plan"] = sglang_json(*r.sglang);
    if (r.ollama) j["runtime_plan"] = ollama_json(*r.ollama);
    j["placements"] = json::array();
    for (const auto & pl : r.placements) {
        j["placements"].push_back({{"tensor_parallel_size", pl.tp}, {"pipeline_parallel_size", pl.pp},
                                   {"data_parallel_size", pl.dp}, {"why", pl.why},
                                   {"num_gpu_blocks", pl.plan.num_gpu_blocks}, {"max_concurrency", pl.plan.max_concurrency},
                                   {"total_concurrency", pl.total_concurrency},
                                   {"max_model_len_fit", pl.plan.max_model_len_fit}, {"fits", pl.fits}});
    }
    j["fits"] = r.fits();
    j["warnings"] = r.warn;
    j["launch"] = serving_launch_command(r);
    return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n"; // names from files may not be UTF-8
}

} // namespace kvfit
