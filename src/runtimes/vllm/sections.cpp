// The report's sections of a vLLM plan (layout.h: vllm_sections; runtime.h: plan_section), from vllm_plan itself.
// vLLM's own log lines are quoted in its words so a reader can match them against a real start; each figure names
// the vLLM file and function whose rule it reproduces (the overhead terms carry theirs: overhead.cpp).
#include "runtimes/vllm/layout.h"
#include "kvfit/units.h"
#include "runtimes/common/sections.h"

#include <algorithm>
#include <fmt/format.h>
#include <string_view>

namespace kvfit::detail {
namespace {

constexpr const char * k_src_budget = "vllm/v1/worker/gpu_worker.py determine_available_memory";
constexpr const char * k_src_blocks = "vllm/v1/core/kv_cache_utils.py get_kv_cache_configs";
constexpr const char * k_src_report = "vllm/v1/core/kv_cache_utils.py _report_kv_cache_config";
constexpr const char * k_src_spec = "vllm/v1/core/kv_cache_utils.py get_kv_cache_spec (docs/rules/vllm-speculative.md)";

// A budget term of a rank (activation, non-torch, CUDA graphs: vllm_overhead_terms) as a figure: its bytes, its
// source and whether kvfit estimated it; the rank's figure when the term is absent (a rank planned without terms).
plan_figure term_figure(const vllm_rank & k, std::string_view name, uint64_t bytes) {
    for (const vllm_term & t : k.terms) {
        if (t.name == name) return size_figure(std::string(name), bytes, t.source, t.basis == "estimate");
    }
    return size_figure(std::string(name), bytes, k_src_budget);
}

plan_section placement_section(const vllm_settings & s) {
    plan_section out; // the lead section: right under the model line
    add_row(out, fmt::format("placement: TP {}, PP {}, DP {}{}", s.tp, s.pp, s.dp, s.dcp > 1 ? fmt::format(", DCP {}", s.dcp) : ""),
            {count_figure("tensor_parallel_size", s.tp, "GPUs", "flag"),
             count_figure("pipeline_parallel_size", s.pp, "GPUs", "flag"),
             count_figure("data_parallel_size", s.dp, "replicas", "flag")});
    return out;
}

plan_section placements_section(const std::vector<vllm_placement> & placements) {
    plan_section out{"Placements considered", {}};
    for (const auto & pl : placements) {
        add_row(out, fmt::format("{:<44} blocks {:>8}  concurrency {:>8.2f}x  max_model_len fit {:>9}  {}", pl.why,
                                 with_commas(pl.plan.num_gpu_blocks), pl.total_concurrency,
                                 with_commas(pl.plan.max_model_len_fit), pl.fits ? "fits" : "does not fit"),
                {count_figure("num_gpu_blocks", double(pl.plan.num_gpu_blocks), "blocks", k_src_blocks),
                 count_figure("total_concurrency", pl.total_concurrency, "requests", k_src_report),
                 count_figure("max_model_len_fit", double(pl.plan.max_model_len_fit), "tokens", k_src_blocks)});
    }
    return out;
}

plan_section specs_section(const model_desc & m, const vllm_plan & p) {
    const vllm_settings & s = p.settings;
    plan_section out{fmt::format("KV-cache specs per rank (kv-cache-dtype {}, block size {} tokens)", s.kv_cache_dtype,
                                 p.block_size), {}};
    const uint32_t heads = p.n_head_kv_rank;
    add_row(out, fmt::format("attention: {} KV head{} per rank{}, {} B per token per layer", heads, heads == 1 ? "" : "s",
                             m.count(layer_kind::mla) ? " (MLA latent, replicated on every rank)" : "",
                             with_commas(p.attn_bytes_per_token)),
            {count_figure("n_head_kv_per_rank", heads, "heads", "vllm/config/model.py ModelConfig.get_num_kv_heads"),
             size_figure("attention_bytes_per_token", p.attn_bytes_per_token, "vllm/v1/kv_cache_interface.py page_size_bytes")});
    if (p.mamba_state_bytes) {
        add_row(out, fmt::format("mamba state: conv {} B + temporal {} B = {} B per layer", with_commas(p.mamba_conv_bytes),
                                 with_commas(p.mamba_ssm_bytes), with_commas(p.mamba_state_bytes)),
                {size_figure("mamba_conv_bytes", p.mamba_conv_bytes, "vllm/v1/kv_cache_interface.py MambaSpec (MambaStateDtypeCalculator)"),
                 size_figure("mamba_ssm_bytes", p.mamba_ssm_bytes, "vllm/v1/kv_cache_interface.py MambaSpec (MambaStateDtypeCalculator)"),
                 size_figure("mamba_state_bytes", p.mamba_state_bytes, "vllm/v1/kv_cache_interface.py MambaSpec (MambaStateDtypeCalculator)")});
        if (p.block_size_raised) add_row(out, fmt::format("\"Setting attention block size to {} tokens\"", p.block_size));
        if (p.mamba_padding_pct > 0) add_row(out, fmt::format("\"Padding mamba page size by {:.2f}%\"", p.mamba_padding_pct));
    }
    std::string kinds;
    for (const auto & g : p.groups) kinds += fmt::format("{}{}", kinds.empty() ? "" : ", ", g.kind);
    add_row(out, fmt::format("page {} B per layer per block; {} group{} of {} layers ({}); {} padding layers",
                             with_commas(p.page_bytes), p.groups.size(), p.groups.size() == 1 ? "" : "s", p.group_size,
                             kinds, p.padding_layers),
            {size_figure("page_bytes", p.page_bytes, "vllm/v1/core/kv_cache_utils.py unify_kv_cache_spec_page_size"),
             count_figure("groups", double(p.groups.size()), "groups", k_src_blocks),
             count_figure("group_size", p.group_size, "layers", k_src_blocks),
             count_figure("padding_layers", p.padding_layers, "layers", k_src_blocks)});
    add_row(out, fmt::format("one block over all KV tensors: {} B", with_commas(p.block_bytes)),
            {size_figure("block_bytes", p.block_bytes, k_src_blocks)});
    if (!p.speculative.method.empty()) { // --speculative-config (docs/rules/vllm-speculative.md)
        const vllm_spec_plan & sp = p.speculative;
        add_row(out, fmt::format("speculative ({}, {} draft token{}): {} drafter KV layer{} in the pool, {} B per token per "
                                 "rank (vLLM rule)", sp.method, sp.num_speculative_tokens,
                                 sp.num_speculative_tokens == 1 ? "" : "s", sp.draft_kv_layers,
                                 sp.draft_kv_layers == 1 ? "" : "s", with_commas(sp.draft_kv_bytes_per_token)),
                {count_figure("num_speculative_tokens", sp.num_speculative_tokens, "tokens", "flag"),
                 count_figure("draft_kv_layers", sp.draft_kv_layers, "layers", k_src_spec),
                 size_figure("draft_kv_bytes_per_token", sp.draft_kv_bytes_per_token, k_src_spec)});
    }
    return out;
}

plan_section budget_section(const vllm_plan & p, const vllm_rank & k) {
    const vllm_settings & s = p.settings;
    plan_section out{fmt::format("Budget per GPU{} (layers {}-{})",
                                 p.ranks.size() > 1 ? fmt::format(" of PP stage {}", k.pp_rank) : "", k.first_layer,
                                 uint64_t(k.first_layer) + k.n_layer - 1), {}};
    if (s.kv_cache_memory_bytes) {
        add_row(out, fmt::format("--kv-cache-memory-bytes {}: the budget is not profiled", gib_text(uint64_t(s.kv_cache_memory_bytes))),
                {size_figure("kv_cache_memory_bytes", s.kv_cache_memory_bytes, "flag")});
    } else {
        add_row(out, fmt::format("total {} x gpu_memory_utilization {} = {} requested", gib_text(uint64_t(k.total_bytes)),
                                 s.gpu_memory_utilization, gib_text(uint64_t(k.requested_bytes))),
                {size_figure("total_bytes", k.total_bytes, "torch.cuda.mem_get_info (the GPU table's total)"),
                 count_figure("gpu_memory_utilization", s.gpu_memory_utilization, "fraction",
                              "vllm/engine/arg_utils.py gpu_memory_utilization"),
                 size_figure("requested_bytes", k.requested_bytes, k_src_budget)});
        add_row(out, fmt::format("- weights          {:>10}  (\"Model loading took\")", gib_text(uint64_t(k.weights_bytes))),
                {size_figure("weights", k.weights_bytes, "vllm/v1/worker/gpu_model_runner.py load_model")});
        if (!p.speculative.method.empty() && k.draft_weights_bytes) {
            add_row(out, fmt::format("  of which drafter {:>10}  (estimate)", gib_text(uint64_t(k.draft_weights_bytes))),
                    {size_figure("draft_weights", k.draft_weights_bytes, "kvfit: the drafter's checkpoint tensors per rank",
                                 p.speculative.weights_estimate)});
        }
        add_row(out, fmt::format("- activation peak  {:>10}", gib_text(uint64_t(k.activation_bytes))),
                {term_figure(k, "activation", k.activation_bytes)});
        add_row(out, fmt::format("- non-torch        {:>10}", gib_text(uint64_t(k.non_torch_bytes))),
                {term_figure(k, "non-torch", k.non_torch_bytes)});
        if (vllm_graph_estimate(s.rules) && !s.enforce_eager) { // every release that subtracts the graphs (overhead.cpp)
            add_row(out, fmt::format("- CUDA graphs      {:>10}", gib_text(uint64_t(k.cudagraph_bytes))),
                    {term_figure(k, "CUDA graphs", k.cudagraph_bytes)});
        }
    }
    plan_figure available = size_figure("available_kv_bytes", uint64_t(std::max<int64_t>(0, k.available_kv_bytes)), k_src_budget);
    add_row(out, fmt::format("\"Available KV cache memory: {}\" -> {} blocks of {} KV tensors", signed_gib_text(k.available_kv_bytes),
                             with_commas(k.num_blocks), k.n_tensors),
            {available, count_figure("num_blocks", double(k.num_blocks), "blocks", "vllm/v1/core/kv_cache_utils.py get_num_blocks"),
             count_figure("n_tensors", k.n_tensors, "tensors", k_src_blocks)});
    return out;
}

plan_section pool_section(const vllm_plan & p) {
    const vllm_settings & s = p.settings;
    // every worker of a replica (TP x PP) profiles its GPU; vLLM takes the minimum (kv_cache_utils.py
    // get_kv_cache_configs); the stages' figures are the ranks', the TP ranks of a stage alike
    const size_t n_ranks = p.ranks.size() * std::max<uint64_t>(1, s.tp);
    plan_section out{fmt::format("Pool (max_model_len {}, max_num_seqs {}, max_num_batched_tokens {})",
                                 with_commas(p.max_model_len), s.max_num_seqs, s.max_num_batched_tokens), {}};
    add_row(out, fmt::format("# GPU blocks: {} (minimum over {} worker{})", with_commas(p.num_gpu_blocks), n_ranks,
                             n_ranks == 1 ? "" : "s"),
            {count_figure("num_gpu_blocks", double(p.num_gpu_blocks), "blocks", k_src_blocks)});
    std::string parts;
    for (const auto & g : p.groups) parts += fmt::format("{}{}", parts.empty() ? "" : " + ", g.per_request_blocks);
    add_row(out, fmt::format("blocks per request: {} ({}{})", p.per_request_blocks, parts,
                             p.hybrid ? fmt::format(", mamba cache mode {}", mamba_cache_mode_name(s.mamba_mode)) : ""),
            {count_figure("per_request_blocks", double(p.per_request_blocks), "blocks",
                          "vllm/v1/kv_cache_interface.py max_memory_usage_bytes")});
    add_row(out, fmt::format("\"Maximum concurrency for {} tokens per request: {:.2f}x\"", with_commas(p.max_model_len),
                             p.max_concurrency),
            {count_figure("max_concurrency", p.max_concurrency, "requests",
                          "vllm/v1/core/kv_cache_utils.py get_max_concurrency_for_kv_cache_config")});
    add_row(out, fmt::format("\"GPU KV cache size: {} tokens\" (v0.21+: int(concurrency x max_model_len))",
                             with_commas(p.kv_cache_tokens)),
            {count_figure("kv_cache_tokens", double(p.kv_cache_tokens), "tokens", std::string(k_src_report) + " (vllm #43308)")});
    add_row(out, fmt::format("\"GPU KV cache size: {} tokens\" (up to v0.20: blocks // {} groups x block size)",
                             with_commas(p.kv_cache_tokens_v2025), p.groups.size()),
            {count_figure("kv_cache_tokens_v2025", double(p.kv_cache_tokens_v2025), "tokens", k_src_report)});
    add_row(out, fmt::format("one request of {} tokens needs {}; the largest max_model_len that fits is {}",
                             with_commas(p.max_model_len), gib_text(uint64_t(p.need_bytes)), with_commas(p.max_model_len_fit)),
            {size_figure("need_bytes", p.need_bytes, "vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory"),
             count_figure("max_model_len_fit", double(p.max_model_len_fit), "tokens",
                          "vllm/v1/core/kv_cache_utils.py _auto_fit_max_model_len (vLLM's binary search)")});
    return out;
}

} // namespace

std::vector<plan_section> vllm_sections(const model_desc & m, const vllm_plan & p,
                                        const std::vector<vllm_placement> & placements) {
    std::vector<plan_section> out;
    out.push_back(placement_section(p.settings));
    if (!placements.empty()) out.push_back(placements_section(placements));
    out.push_back(specs_section(m, p));
    for (const auto & k : p.ranks) out.push_back(budget_section(p, k));
    out.push_back(pool_section(p));
    return out;
}

} // namespace kvfit::detail
