// The human report of a serving plan (include/kvfit/serving_report.h: render_serving_text). Prints only what the
// plans computed; vLLM's own log lines are quoted in its words so a reader can match them against a real start.
#include "kvfit/report.h"
#include "kvfit/serving_report.h"
#include "kvfit/printable.h"

#include <fmt/format.h>

namespace kvfit {
namespace {

std::string gib(int64_t bytes) { return fmt::format("{:.2f} GiB", double(bytes) / double(1ull << 30)); }

std::string devices(const serving_report & r) {
    if (r.gpus.empty()) return "no GPU";
    std::string s = fmt::format("{} x {} ({})", r.gpus.size(), r.gpus[0].name, human_bytes(r.gpus[0].memory_bytes));
    if (r.nodes > 1) s = fmt::format("{} nodes of {}", r.nodes, s);
    return s;
}

void lines(std::string & out, const char * head, const std::vector<std::string> & v) {
    for (const auto & x : v) out += fmt::format("{}{}\n", head, x);
}

void vllm_specs(std::string & out, const model_desc & m, const vllm_plan & p) {
    const vllm_settings & s = p.settings;
    out += fmt::format("\nKV-cache specs per rank (kv-cache-dtype {}, block size {} tokens)\n", s.kv_cache_dtype, p.block_size);
    out += fmt::format("  attention: {} KV head{} per rank{}, {} B per token per layer\n", p.n_head_kv_rank,
                       p.n_head_kv_rank == 1 ? "" : "s",
                       m.count(layer_kind::mla) ? " (MLA latent, replicated on every rank)" : "",
                       with_commas(p.attn_bytes_per_token));
    if (p.mamba_state_bytes) {
        out += fmt::format("  mamba state: conv {} B + temporal {} B = {} B per layer\n", with_commas(p.mamba_conv_bytes),
                           with_commas(p.mamba_ssm_bytes), with_commas(p.mamba_state_bytes));
        if (p.block_size_raised) out += fmt::format("  \"Setting attention block size to {} tokens\"\n", p.block_size);
        if (p.mamba_padding_pct > 0) out += fmt::format("  \"Padding mamba page size by {:.2f}%\"\n", p.mamba_padding_pct);
    }
    std::string kinds;
    for (const auto & g : p.groups) kinds += fmt::format("{}{}", kinds.empty() ? "" : ", ", g.kind);
    out += fmt::format("  page {} B per layer per block; {} group{} of {} layers ({}); {} padding layers\n",
                       with_commas(p.page_bytes), p.groups.size(), p.groups.size() == 1 ? "" : "s", p.group_size, kinds,
                       p.padding_layers);
    out += fmt::format("  one block over all KV tensors: {} B\n", with_commas(p.block_bytes));
}

void vllm_budget(std::string & out, const vllm_plan & p) {
    const vllm_settings & s = p.settings;
    for (const auto & k : p.ranks) {
        out += fmt::format("\nBudget per GPU{} (layers {}-{})\n", p.ranks.size() > 1 ? fmt::format(" of PP stage {}", k.pp_rank) : "",
                           k.first_layer, k.first_layer + k.n_layer - 1);
        if (s.kv_cache_memory_bytes) {
            out += fmt::format("  --kv-cache-memory-bytes {}: the budget is not profiled\n", gib(int64_t(s.kv_cache_memory_bytes)));
        } else {
            out += fmt::format("  total {} x gpu_memory_utilization {} = {} requested\n", gib(int64_t(k.total_bytes)),
                               s.gpu_memory_utilization, gib(int64_t(k.requested_bytes)));
            out += fmt::format("  - weights          {:>10}  (\"Model loading took\")\n", gib(int64_t(k.weights_bytes)));
            out += fmt::format("  - activation peak  {:>10}\n", gib(int64_t(k.activation_bytes)));
            out += fmt::format("  - non-torch        {:>10}\n", gib(int64_t(k.non_torch_bytes)));
            if (s.rules == vllm_rules::v2026 && !s.enforce_eager) {
                out += fmt::format("  - CUDA graphs      {:>10}\n", gib(int64_t(k.cudagraph_bytes)));
            }
        }
        out += fmt::format("  \"Available KV cache memory: {}\" -> {} blocks of {} KV tensors\n",
                           gib(k.available_kv_bytes), with_commas(k.num_blocks), k.n_tensors);
    }
}

void vllm_pool(std::string & out, const vllm_plan & p) {
    const vllm_settings & s = p.settings;
    out += fmt::format("\nPool (max_model_len {}, max_num_seqs {}, max_num_batched_tokens {})\n", with_commas(p.max_model_len),
                       s.max_num_seqs, s.max_num_batched_tokens);
    out += fmt::format("  # GPU blocks: {} (minimum over {} worker{})\n", with_commas(p.num_gpu_blocks), p.ranks.size(),
                       p.ranks.size() == 1 ? "" : "s");
    std::string parts;
    for (const auto & g : p.groups) parts += fmt::format("{}{}", parts.empty() ? "" : " + ", g.per_request_blocks);
    out += fmt::format("  blocks per request: {} ({}{})\n", p.per_request_blocks, parts,
                       p.hybrid ? fmt::format(", mamba cache mode {}", mamba_cache_mode_name(s.mamba_mode)) : "");
    out += fmt::format("  \"Maximum concurrency for {} tokens per request: {:.2f}x\"\n", with_commas(p.max_model_len),
                       p.max_concurrency);
    out += fmt::format("  \"GPU KV cache size: {} tokens\" (v0.24+: int(concurrency x max_model_len))\n",
                       with_commas(p.kv_cache_tokens));
    out += fmt::format("  \"GPU KV cache size: {} tokens\" (up to v0.20: blocks // {} groups x block size)\n",
                       with_commas(p.kv_cache_tokens_v2025), p.groups.size());
    out += fmt::format("  one request of {} tokens needs {}; the largest max_model_len that fits is {}\n",
                       with_commas(p.max_model_len), gib(int64_t(p.need_bytes)), with_commas(p.max_model_len_fit));
}

void render_vllm(std::string & out, const serving_report & r, const vllm_plan & p) {
    const vllm_settings & s = p.settings;
    out += fmt::format("placement: TP {}, PP {}, DP {}{}\n", s.tp, s.pp, s.dp, s.dcp > 1 ? fmt::format(", DCP {}", s.dcp) : "");
    if (!r.placements.empty()) {
        out += "\nPlacements considered\n";
        for (const auto & pl : r.placements) {
            out += fmt::format("  {:<44} blocks {:>8}  concurrency {:>8.2f}x  max_model_len fit {:>9}  {}\n", pl.why,
                               with_commas(pl.plan.num_gpu_blocks), pl.total_concurrency,
                               with_commas(pl.plan.max_model_len_fit), pl.fits ? "fits" : "does not fit");
        }
    }
    vllm_specs(out, r.model, p);
    vllm_budget(out, p);
    vllm_pool(out, p);
}

void render_sglang(std::string & out, const sglang_plan & p) {
    const sglang_settings & s = p.settings;
    out += fmt::format("\nStatic pool per rank (--mem-fraction-static {}, --tp {})\n", s.mem_fraction_static, s.tp);
    out += fmt::format("  weights {}; rest for the pools {}\n", gib(int64_t(p.weights_bytes)), gib(p.rest_bytes));
    if (p.mamba_bytes_per_request) {
        out += fmt::format("  mamba state {} per request; {} slots\n", human_bytes(p.mamba_bytes_per_request), p.mamba_slots);
    }
    out += fmt::format("  KV pool {} at {} B per token (cell_size)\n", gib(int64_t(p.kv_pool_bytes)), with_commas(p.cell_bytes));
    out += fmt::format("  \"KV Cache is allocated. #tokens: {}\"; max running requests {}; context length {}\n",
                       with_commas(p.max_total_num_tokens), p.max_running_requests, with_commas(p.context_length));
}

void render_ollama(std::string & out, const model_desc & m, const ollama_plan & p) {
    out += fmt::format("\nOllama's choices\n  num_ctx {} ({}) x parallel {}{}\n", with_commas(p.num_ctx), p.num_ctx_from,
                       p.num_parallel, p.parallel_forced ? " (forced to 1 for this family by Ollama)" : "");
    out += fmt::format("  cache {}, flash attention {}, --fit target {} per GPU{}\n", ggml_traits(p.cache_type).name,
                       p.flash_attn == flash_attn_mode::on ? "on" : p.flash_attn == flash_attn_mode::off ? "off" : "auto",
                       human_bytes(p.fit_target_bytes), p.mmproj_offload ? " (projector + 1 GiB headroom)" : "");
    const llamacpp_plan & q = p.plan;
    out += fmt::format("\nllama.cpp underneath (kvfit's llama.cpp rules): -c {} -np {}, {} cells per sequence\n",
                       with_commas(q.ctx.n_ctx), q.ctx.n_seq, with_commas(q.ctx.n_ctx_seq));
    out += fmt::format("  weights {}, KV {}, recurrent state {}, compute {}, output {} (host)\n",
                       human_bytes(q.total.weights_bytes), human_bytes(q.total.kv_bytes), human_bytes(q.total.state_bytes),
                       human_bytes(q.total.compute_bytes), human_bytes(q.total.output_bytes));
    out += fmt::format("  offloaded {}/{} layers\n", q.n_gpu_layers, m.n_layer + m.n_layer_mtp + 1);
    for (const auto & d : q.devices) {
        if (d.is_host) continue;
        out += fmt::format("  {}: {} used of {}, {} kept free, {} left\n", d.name, human_bytes(d.used.total()),
                           human_bytes(d.capacity_bytes), human_bytes(d.margin_bytes),
                           d.free_bytes() < 0 ? "-" + human_bytes(uint64_t(-d.free_bytes())) : human_bytes(uint64_t(d.free_bytes())));
    }
}

} // namespace

std::string render_serving_text(const serving_report & r) {
    const model_desc & m = r.model;
    std::string out;
    const std::string rules = r.vllm ? vllm_rules_name(r.vllm->settings.rules)
                            : r.sglang ? "SGLang (pool_configurator.py, 2026 main)" : "Ollama fb30760 (llama-server)";
    out += fmt::format("{} on {}: {}\n", printable(m.name, false), devices(r), rules);
    out += fmt::format("model: {} layers ({} full, {} sliding, {} MLA, {} recurrent), dtype {}{}\n", m.n_layer,
                       m.count(layer_kind::full), m.count(layer_kind::swa), m.count(layer_kind::mla),
                       m.count(layer_kind::recurrent), m.dtype.empty() ? "unstated (bf16 assumed)" : m.dtype,
                       m.ssm_dtype.empty() ? "" : ", mamba_ssm_dtype " + m.ssm_dtype);
    if (r.vllm) render_vllm(out, r, *r.vllm);
    if (r.sglang) render_sglang(out, *r.sglang);
    if (r.ollama) render_ollama(out, m, *r.ollama);

    const std::vector<std::string> & errors = r.vllm ? r.vllm->errors : r.sglang ? r.sglang->errors : std::vector<std::string>{};
    out += fmt::format("\nVerdict: {}\n", r.fits() ? "starts, and meets the requested length and concurrency"
                                                   : errors.empty() ? "does not meet the request" : "does not start");
    lines(out, "  error: ", errors);
    lines(out, "  warning: ", r.vllm ? r.vllm->warnings : r.sglang ? r.sglang->warnings : r.ollama->warnings);
    lines(out, "  note: ", r.vllm ? r.vllm->notes : r.sglang ? r.sglang->notes : r.ollama->notes);
    lines(out, "  note: ", r.warn);
    out += "\nLaunch\n" + serving_launch_command(r);
    out += "\nGiB = 2^30 bytes.\n";
    return out;
}

} // namespace kvfit
