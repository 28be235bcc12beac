// The human report of a vLLM, SGLang or Ollama plan (include/kvfit/report.h: render_text), from the plan's detail
// (docs/json.md). vLLM's own log lines are quoted in its words so a reader can match them against a real start.
#include "report/sections.h"
#include "kvfit/printable.h"

#include <algorithm>
#include <fmt/format.h>

namespace kvfit::detail {
namespace {

std::string gib(int64_t bytes) { return fmt::format("{:.2f} GiB", double(bytes) / double(1ull << 30)); }

std::string devices(const plan_result & r, uint64_t nodes) {
    const std::vector<device_spec> & gpus = r.target.gpus;
    if (gpus.empty()) return "no GPU";
    const bool alike = std::all_of(gpus.begin(), gpus.end(), [&](const device_spec & g) {
        return g.name == gpus[0].name && g.memory_bytes == gpus[0].memory_bytes;
    });
    std::string s;
    if (alike) {
        s = fmt::format("{} x {} ({})", gpus.size(), gpus[0].name, gpu_memory_text(gpus[0]));
    } else { // unlike GPUs each named (the plan's warning says every rank is planned on the smallest)
        for (const auto & g : gpus) s += fmt::format("{}{} ({})", s.empty() ? "" : " + ", g.name, gpu_memory_text(g));
    }
    if (nodes > 1) s = fmt::format("{} nodes of {}", nodes, s);
    return s;
}

void lines(std::string & out, const char * head, const std::vector<std::string> & v) {
    for (const auto & x : v) out += fmt::format("{}{}\n", head, x);
}

void vllm_specs(std::string & out, const model_desc & m, const ojson & d) {
    const ojson & s = d.at("settings");
    const uint64_t heads = u64(d, "n_head_kv_per_rank");
    out += fmt::format("\nKV-cache specs per rank (kv-cache-dtype {}, block size {} tokens)\n", str(s, "kv_cache_dtype"),
                       u64(d, "block_size"));
    out += fmt::format("  attention: {} KV head{} per rank{}, {} B per token per layer\n", heads, heads == 1 ? "" : "s",
                       m.count(layer_kind::mla) ? " (MLA latent, replicated on every rank)" : "",
                       with_commas(u64(d, "attention_bytes_per_token")));
    if (u64(d, "mamba_state_bytes")) {
        out += fmt::format("  mamba state: conv {} B + temporal {} B = {} B per layer\n", with_commas(u64(d, "mamba_conv_bytes")),
                           with_commas(u64(d, "mamba_ssm_bytes")), with_commas(u64(d, "mamba_state_bytes")));
        if (flag(d, "block_size_raised")) out += fmt::format("  \"Setting attention block size to {} tokens\"\n", u64(d, "block_size"));
        if (dbl(d, "mamba_padding_percent") > 0) {
            out += fmt::format("  \"Padding mamba page size by {:.2f}%\"\n", dbl(d, "mamba_padding_percent"));
        }
    }
    const ojson & groups = d.at("groups");
    std::string kinds;
    for (const auto & g : groups) kinds += fmt::format("{}{}", kinds.empty() ? "" : ", ", str(g, "kind"));
    out += fmt::format("  page {} B per layer per block; {} group{} of {} layers ({}); {} padding layers\n",
                       with_commas(u64(d, "page_bytes")), groups.size(), groups.size() == 1 ? "" : "s", u64(d, "group_size"),
                       kinds, u64(d, "padding_layers"));
    out += fmt::format("  one block over all KV tensors: {} B\n", with_commas(u64(d, "block_bytes")));
    if (d.contains("speculative")) { // --speculative-config (docs/rules/vllm-speculative.md)
        const ojson & sp = d.at("speculative");
        out += fmt::format("  speculative ({}, {} draft token{}): {} drafter KV layer{} in the pool, {} B per token per rank "
                           "(vLLM rule)\n", str(sp, "method"), u64(sp, "num_speculative_tokens"),
                           u64(sp, "num_speculative_tokens") == 1 ? "" : "s", u64(sp, "draft_kv_layers"),
                           u64(sp, "draft_kv_layers") == 1 ? "" : "s", with_commas(u64(sp, "draft_kv_bytes_per_token")));
    }
}

void vllm_budget(std::string & out, const ojson & d) {
    const ojson & s = d.at("settings");
    const ojson & ranks = d.at("per_rank");
    for (const auto & k : ranks) {
        const uint64_t first = u64(k, "first_layer");
        out += fmt::format("\nBudget per GPU{} (layers {}-{})\n",
                           ranks.size() > 1 ? fmt::format(" of PP stage {}", u64(k, "pp_rank")) : "", first,
                           first + u64(k, "n_layer") - 1);
        if (u64(s, "kv_cache_memory_bytes")) {
            out += fmt::format("  --kv-cache-memory-bytes {}: the budget is not profiled\n", gib(int64_t(u64(s, "kv_cache_memory_bytes"))));
        } else {
            out += fmt::format("  total {} x gpu_memory_utilization {} = {} requested\n", gib(int64_t(u64(k, "total_bytes"))),
                               dbl(s, "gpu_memory_utilization"), gib(int64_t(u64(k, "requested_bytes"))));
            out += fmt::format("  - weights          {:>10}  (\"Model loading took\")\n", gib(int64_t(u64(k, "weights_bytes"))));
            if (k.contains("draft_weights_bytes") && u64(k, "draft_weights_bytes")) {
                out += fmt::format("    of which drafter {:>10}  (estimate)\n", gib(int64_t(u64(k, "draft_weights_bytes"))));
            }
            out += fmt::format("  - activation peak  {:>10}\n", gib(int64_t(u64(k, "activation_bytes"))));
            out += fmt::format("  - non-torch        {:>10}\n", gib(int64_t(u64(k, "non_torch_bytes"))));
            if (str(s, "vllm_rules") == "2026" && !flag(s, "enforce_eager")) {
                out += fmt::format("  - CUDA graphs      {:>10}\n", gib(int64_t(u64(k, "cudagraph_bytes"))));
            }
        }
        out += fmt::format("  \"Available KV cache memory: {}\" -> {} blocks of {} KV tensors\n", gib(i64(k, "available_kv_bytes")),
                           with_commas(u64(k, "num_blocks")), u64(k, "n_tensors"));
    }
}

void vllm_pool(std::string & out, const ojson & d) {
    const ojson & s = d.at("settings");
    // every worker of a replica (TP x PP) profiles its GPU; vLLM takes the minimum (kv_cache_utils.py
    // get_kv_cache_configs); the stages' figures are per_rank's, the TP ranks of a stage alike
    const size_t n_ranks = d.at("per_rank").size() * std::max<uint64_t>(1, u64(s, "tensor_parallel_size"));
    out += fmt::format("\nPool (max_model_len {}, max_num_seqs {}, max_num_batched_tokens {})\n",
                       with_commas(u64(d, "max_model_len")), u64(s, "max_num_seqs"), u64(s, "max_num_batched_tokens"));
    out += fmt::format("  # GPU blocks: {} (minimum over {} worker{})\n", with_commas(u64(d, "num_gpu_blocks")), n_ranks,
                       n_ranks == 1 ? "" : "s");
    std::string parts;
    for (const auto & g : d.at("groups")) parts += fmt::format("{}{}", parts.empty() ? "" : " + ", u64(g, "per_request_blocks"));
    out += fmt::format("  blocks per request: {} ({}{})\n", u64(d, "per_request_blocks"), parts,
                       flag(d, "hybrid") ? fmt::format(", mamba cache mode {}", str(s, "mamba_cache_mode")) : "");
    out += fmt::format("  \"Maximum concurrency for {} tokens per request: {:.2f}x\"\n", with_commas(u64(d, "max_model_len")),
                       dbl(d, "max_concurrency"));
    out += fmt::format("  \"GPU KV cache size: {} tokens\" (v0.21+: int(concurrency x max_model_len))\n",
                       with_commas(u64(d, "kv_cache_tokens")));
    out += fmt::format("  \"GPU KV cache size: {} tokens\" (up to v0.20: blocks // {} groups x block size)\n",
                       with_commas(u64(d, "kv_cache_tokens_v2025")), d.at("groups").size());
    out += fmt::format("  one request of {} tokens needs {}; the largest max_model_len that fits is {}\n",
                       with_commas(u64(d, "max_model_len")), gib(int64_t(u64(d, "need_bytes"))),
                       with_commas(u64(d, "max_model_len_fit")));
}

void render_vllm(std::string & out, const model_desc & m, const ojson & d) {
    const ojson & s = d.at("settings");
    const uint64_t dcp = u64(s, "decode_context_parallel_size");
    out += fmt::format("placement: TP {}, PP {}, DP {}{}\n", u64(s, "tensor_parallel_size"), u64(s, "pipeline_parallel_size"),
                       u64(s, "data_parallel_size"), dcp > 1 ? fmt::format(", DCP {}", dcp) : "");
    if (!d.at("placements").empty()) {
        out += "\nPlacements considered\n";
        for (const auto & pl : d.at("placements")) {
            out += fmt::format("  {:<44} blocks {:>8}  concurrency {:>8.2f}x  max_model_len fit {:>9}  {}\n", str(pl, "why"),
                               with_commas(u64(pl, "num_gpu_blocks")), dbl(pl, "total_concurrency"),
                               with_commas(u64(pl, "max_model_len_fit")), flag(pl, "fits") ? "fits" : "does not fit");
        }
    }
    vllm_specs(out, m, d);
    vllm_budget(out, d);
    vllm_pool(out, d);
}

void render_sglang(std::string & out, const ojson & d) {
    const ojson & s = d.at("settings");
    out += fmt::format("\nStatic pool per rank (--mem-fraction-static {}, --tp {})\n", dbl(s, "mem_fraction_static"), u64(s, "tp"));
    out += fmt::format("  weights {}; rest for the pools {}\n", gib(int64_t(u64(d, "weights_bytes"))), gib(i64(d, "rest_bytes")));
    if (u64(d, "mamba_bytes_per_request")) {
        out += fmt::format("  mamba state {} per request; {} slots\n", human_bytes(u64(d, "mamba_bytes_per_request")),
                           u64(d, "max_mamba_cache_size"));
    }
    if (d.contains("speculative")) { // speculative decoding (SGLang rules.cpp): the drafter and the draft tokens' states
        const ojson & sp = d.at("speculative");
        const uint64_t layers = u64(sp, "draft_layers");
        out += fmt::format("  speculative {}: {} steps, topk {}, {} draft tokens; {}\n", str(sp, "algorithm"),
                           u64(sp, "num_steps"), u64(sp, "eagle_topk"), u64(sp, "num_draft_tokens"), layers
                           ? fmt::format("drafter KV {} ({} layer{}), weights {} (estimate)", gib(int64_t(u64(sp, "draft_kv_bytes"))),
                                         layers, layers == 1 ? "" : "s", gib(int64_t(u64(sp, "draft_weights_bytes"))))
                           : std::string("the draft model is not read (its KV and weights are not counted)"));
        if (u64(d, "mamba_ratio")) {
            out += fmt::format("  mamba intermediate states {} ({} per request); {} slots per running request ({})\n",
                               gib(int64_t(u64(sp, "mamba_intermediate_bytes"))),
                               human_bytes(u64(sp, "mamba_intermediate_bytes_per_request")), u64(d, "mamba_ratio"),
                               str(d, "mamba_radix_cache_strategy"));
        }
    }
    out += fmt::format("  KV pool {} at {} B per token (cell_size)\n", gib(int64_t(u64(d, "kv_pool_bytes"))),
                       with_commas(u64(d, "cell_bytes")));
    if (d.contains("swa_tokens")) { // the hybrid SWA pool: both pools, and the ratio between them
        out += fmt::format("  full pool {} tokens x {} B; sliding-window pool {} tokens x {} B (--swa-full-tokens-ratio {})\n",
                           with_commas(u64(d, "full_tokens")), with_commas(u64(d, "full_bytes_per_token")),
                           with_commas(u64(d, "swa_tokens")), with_commas(u64(d, "swa_bytes_per_token")),
                           dbl(d, "swa_full_tokens_ratio"));
    }
    out += fmt::format("  \"KV Cache is allocated. #tokens: {}\"; max running requests {}; context length {}\n",
                       with_commas(u64(d, "kv_cache_tokens")), u64(d, "max_running_requests"),
                       with_commas(u64(s, "context_length")));
}

void render_ollama(std::string & out, const model_desc & m, const runtime_plan & p) {
    const ojson & d = p.detail;
    out += fmt::format("\nOllama's choices\n  num_ctx {} ({}) x parallel {}{}\n", with_commas(u64(d, "num_ctx")),
                       str(d, "num_ctx_from"), u64(d, "num_parallel"),
                       flag(d, "parallel_forced") ? " (forced to 1 for this family by Ollama)" : "");
    out += fmt::format("  cache {}, flash attention {}, --fit target {} per GPU{}\n", str(d, "cache_type"),
                       str(d, "flash_attention"), human_bytes(u64(d, "fit_target_bytes")),
                       flag(d, "mmproj_offload") ? " (projector + 1 GiB headroom)" : "");
    const ojson & q = d.at("llama_server");
    out += fmt::format("\nllama.cpp underneath (kvfit's llama.cpp rules): -c {} -np {}, {} cells per sequence\n",
                       with_commas(u64(q, "n_ctx")), u64(q, "n_seq"), with_commas(u64(q, "n_ctx_seq")));
    uint64_t weights = 0, kv = 0, state = 0, compute = 0, output = 0;
    for (const auto & dev : p.devices) {
        weights += dev.bytes_of("weights"), kv += dev.bytes_of("kv"), state += dev.bytes_of("state");
        compute += dev.bytes_of("compute"), output += dev.bytes_of("output");
    }
    out += fmt::format("  weights {}, KV {}, recurrent state {}, compute {}, output {} (host)\n", human_bytes(weights),
                       human_bytes(kv), human_bytes(state), human_bytes(compute), human_bytes(output));
    out += fmt::format("  offloaded {}/{} layers\n", u64(q, "n_gpu_layers"), m.n_layer + m.n_layer_mtp + 1);
    for (const auto & dev : p.devices) {
        if (dev.is_host) continue;
        out += fmt::format("  {}: {} used of {}, {} kept free, {} left\n", dev.name, human_bytes(dev.used_bytes()),
                           human_bytes(dev.capacity_bytes), human_bytes(dev.reserved_bytes),
                           dev.free_bytes() < 0 ? "-" + human_bytes(uint64_t(-dev.free_bytes()))
                                                : human_bytes(uint64_t(dev.free_bytes())));
    }
}

} // namespace

void render_search(std::string & out, const plan_result & r) {
    const runtime_plan & p = r.plan;
    if (!r.runtime || (p.max_context.empty() && p.alternatives.empty())) return;
    const runtime_info & rt = *r.runtime;
    const std::string ctx = std::string(rt.context.spelled);
    if (!p.max_context.empty()) {
        out += fmt::format("\nLargest {} that fits, by KV cache type ({}):\n", ctx, flag_spelling(rt, rt.cache_type_k));
        for (const auto & c : p.max_context) {
            const std::string top = c.capped ? "  (the top of the search, the model's context length: memory is not the limit)" : "";
            if (c.all_full_attention) {
                out += fmt::format("  if all {} layers were full attention ({}): {}{}\n", r.model.n_layer, c.cache_type,
                                   with_commas(c.context_tokens), top);
            } else if (!c.allowed) {
                out += fmt::format("  {:<9} refused: {}\n", c.cache_type, c.refusal);
            } else {
                out += fmt::format("  {:<9} {:>11}{}\n", c.cache_type, with_commas(c.context_tokens),
                                   c.context_tokens == 0 ? "  (none fits with the other settings as given)" : top);
            }
        }
    }
    if (p.alternatives.empty()) return;
    out += "What would fit instead (the settings changed):\n";
    for (const auto & a : p.alternatives) {
        const bool sets_context = a.knob.starts_with("context"); // "context", "context+sequences"
        out += fmt::format("  {}{}\n", a.flags, sets_context ? "" : fmt::format(" (at {} {})", ctx, a.context_tokens));
    }
}

std::string render_serving_text(const plan_result & r) {
    const model_desc & m = r.model;
    const runtime_plan & p = r.plan;
    std::string out;
    out += fmt::format("{} on {}: {}\n", printable(m.name, false), devices(r, p.runtime == "vllm" ? u64(p.detail, "nodes") : 1), p.rules);
    // every kind a layer has: chunked (Llama-4's local layers) and layers without attention only when present
    const uint32_t chunked = m.count(layer_kind::chunked), none = m.count(layer_kind::none);
    out += fmt::format("model: {} layers ({} full, {} sliding, {}{} MLA, {} recurrent{}), dtype {}{}\n", m.n_layer,
                       m.count(layer_kind::full), m.count(layer_kind::swa),
                       chunked ? fmt::format("{} chunked, ", chunked) : "", m.count(layer_kind::mla),
                       m.count(layer_kind::recurrent), none ? fmt::format(", {} without attention", none) : "",
                       m.dtype.empty() ? "unstated (bf16 assumed)" : m.dtype,
                       m.ssm_dtype.empty() ? "" : ", mamba_ssm_dtype " + m.ssm_dtype);
    if (p.runtime == "vllm") render_vllm(out, m, p.detail);
    if (p.runtime == "sglang") render_sglang(out, p.detail);
    if (p.runtime == "ollama") render_ollama(out, m, p);

    out += fmt::format("\nVerdict: {}\n", p.fits ? "starts, and meets the requested length and concurrency"
                                                 : p.refusals.empty() ? "does not meet the request" : "does not start");
    lines(out, "  error: ", p.refusals);
    lines(out, "  warning: ", p.warnings);
    lines(out, "  assumed: ", p.assumptions);
    lines(out, "  note: ", p.notes);
    render_search(out, r);
    if (!p.launch.empty()) out += "\nLaunch\n" + p.launch + (p.launch.ends_with('\n') ? "" : "\n");
    out += "\nGiB = 2^30 bytes.\n";
    return out;
}

} // namespace kvfit::detail
