// vLLM: from the layout to a plan. Budget per worker (vllm/v1/worker/gpu_worker.py determine_available_memory),
// blocks (kv_cache_utils.py get_num_blocks, get_kv_cache_configs: minimum over workers), concurrency and the
// "GPU KV cache size" line (get_max_concurrency_for_kv_cache_config, get_kv_cache_capacity / v0.19
// _report_kv_cache_config), the max_model_len check and auto-fit (_check_enough_kv_cache_memory,
// _auto_fit_max_model_len), and max_num_seqs against mamba blocks (RULES §2.5). Defaults: RULES §4.
#include "runtimes/vllm/layout.h"
#include "runtimes/common/quant.h"

#include "kvfit/error.h"
#include "kvfit/search.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>

namespace kvfit {

using detail::cdiv;

const char * vllm_rules_name(vllm_rules r) {
    switch (r) {
    case vllm_rules::v2026: return "vLLM 2026 rules (v0.24+)";
    case vllm_rules::v0_21: return "vLLM 0.21 rules (v0.21-v0.23)";
    default: return "vLLM 2025 rules (<= v0.20)";
    }
}

const char * vllm_rules_key(vllm_rules r) {
    return r == vllm_rules::v2026 ? "2026" : r == vllm_rules::v0_21 ? "0.21" : "2025";
}

vllm_rules parse_vllm_rules(const std::string & text) {
    if (text == "2025") return vllm_rules::v2025;
    if (text == "2026") return vllm_rules::v2026;
    // a release "0.N" or "0.N.M": its rule set by minor version (docs/rules/vllm-overhead.md §1)
    unsigned minor = 0;
    int used = 0;
    if (text.size() <= 12 && std::sscanf(text.c_str(), "0.%u%n", &minor, &used) == 1 && minor >= 1 && minor < 1000) {
        const std::string rest = text.substr(size_t(used));
        const bool patch = rest.empty() || (rest.size() >= 2 && rest[0] == '.' &&
                                            rest.find_first_not_of("0123456789", 1) == std::string::npos);
        if (patch) return minor <= 20 ? vllm_rules::v2025 : minor <= 23 ? vllm_rules::v0_21 : vllm_rules::v2026;
    }
    throw error(fmt::format("--vllm-rules '{}': expected 2025, 0.21 or 2026 (or a release such as 0.19, 0.22, 0.26)", text));
}

const char * mamba_cache_mode_name(mamba_cache_mode m) {
    switch (m) {
    case mamba_cache_mode::none: return "none";
    case mamba_cache_mode::align: return "align";
    case mamba_cache_mode::all: return "all";
    default: return "auto";
    }
}

const std::vector<std::string> & vllm_kv_cache_dtypes() {
    static const std::vector<std::string> v = {"auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla",
                                               "fp8_per_token_head", "int8_per_token_head", "nvfp4"};
    return v;
}

uint64_t vllm_default_activation_bytes(const model_desc & m, uint32_t mnbt, uint32_t tp, uint32_t first, uint32_t n) {
    uint64_t f = 4ull * m.n_embd;
    for (uint32_t il = first; il < first + n && il < m.n_layer; ++il) {
        const uint64_t moe = m.is_moe.empty() || !m.is_moe[il] ? 0 : uint64_t(m.n_expert_used) * m.n_ff_exp + m.n_ff_shexp;
        f = std::max({f, uint64_t(m.n_ff[il]), moe});
    }
    // the activations are in the dtype the model runs in (with_dtype has resolved --dtype into m.dtype)
    const uint64_t e = detail::torch_dtype_bytes(m.dtype, 2, "dtype");
    return uint64_t(mnbt) * 4 * e * f / tp;
}

uint64_t vllm_default_non_torch_bytes(uint32_t world) { return world > 1 ? 512ull << 20 : 358ull << 20; }

uint64_t vllm_default_cudagraph_bytes(const model_desc & m, const vllm_settings & s) {
    if (!vllm_graph_estimate(s.rules) || s.enforce_eager) return 0;
    return m.count(layer_kind::recurrent) > 0 ? 1ull << 30 : 512ull << 20;
}

namespace {

/// "yarn factor 4" (each entry of the config's rope_scaling), for the messages that name the derived length
std::string rope_text(const model_desc & m) {
    std::string out;
    for (const auto & e : m.rope_scaling) {
        out += (out.empty() ? "" : ", ") + (e.type.empty() ? std::string("(no type)") : e.type) +
               (e.factor > 0 ? fmt::format(" factor {}", e.factor) : std::string());
    }
    return out;
}


std::string gib(double bytes) { return fmt::format("{:.2f}", bytes / double(1ull << 30)); }

bool is_hybrid(const model_desc & m) {
    bool attn = false, rec = false;
    for (uint32_t il = 0; il < m.n_layer; ++il) attn |= m.has_kv(il), rec |= m.is_recurrent(il);
    return attn && rec;
}

// Checks vLLM makes before it allocates anything (ModelConfig.verify_with_parallel_config and friends).
void check_input(const model_desc & m, const vllm_settings & s) {
    const auto & dts = vllm_kv_cache_dtypes();
    if (std::find(dts.begin(), dts.end(), s.kv_cache_dtype) == dts.end()) {
        throw error(fmt::format("--kv-cache-dtype '{}': invalid choice (choose from auto, fp8, fp8_e4m3, fp8_e5m2, "
                                "fp8_ds_mla, fp8_per_token_head, int8_per_token_head, nvfp4)", s.kv_cache_dtype));
    }
    bool compressed = false;
    for (const auto & layer : m.caches) {
        for (const auto & c : layer) compressed |= c.kind == cache_kind::compressed;
    }
    if (s.kv_cache_dtype == "fp8_ds_mla" && m.count(layer_kind::mla) == 0 && !compressed) {
        throw error("--kv-cache-dtype fp8_ds_mla: only MLA models (DeepSeek sparse MLA) use this layout");
    }
    if (!(s.gpu_memory_utilization > 0 && s.gpu_memory_utilization <= 1)) {
        throw error(fmt::format("--gpu-memory-utilization {}: must be in (0, 1]", s.gpu_memory_utilization));
    }
    if (s.tp == 0 || s.pp == 0 || s.dp == 0 || s.dcp == 0) throw error("vllm: parallel sizes must be at least 1");
    if (s.rules == vllm_rules::v2026 && m.rec_kind == recurrent_kind::lightning && m.count(layer_kind::recurrent) > 0) {
        // vLLM's only lightning-attention model, MiniMaxText01ForCausalLM (MiniMaxForCausalLM, MiniMaxM1ForCausalLM map
        // to it), is listed in vllm/model_executor/models/registry.py _PREVIOUSLY_SUPPORTED_MODELS as "0.23.0":
        // _raise_for_unsupported refuses it at startup with these words
        throw error("vllm: Model architecture MiniMaxText01ForCausalLM (MiniMax-Text-01 / MiniMax-M1 lightning attention) "
                    "was supported in vLLM until v0.23.0, and is not supported anymore. Please use an older version of "
                    "vLLM if you want to use this model architecture (--vllm-rules 2025 plans one)");
    }
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (m.n_head[il] != 0 && m.n_head[il] % s.tp != 0) {
            throw error(fmt::format("Total number of attention heads ({}) must be divisible by tensor parallel size ({}).",
                                    m.n_head[il], s.tp));
        }
    }
    detail::check_tp_divides_heads(m, s.tp, "vllm", "-tp"); // KV heads, GDN key/value heads (torch.h)
    if (m.count(layer_kind::recurrent) > 0 && m.ssm_n_head % s.tp != 0) {
        throw error(fmt::format("vllm: {} SSM/linear-attention heads are not divisible by tensor parallel size {}",
                                m.ssm_n_head, s.tp));
    }
    if (s.pp > m.n_layer) throw error(fmt::format("-pp {}: more pipeline stages than the {} layers", s.pp, m.n_layer));
    if (s.tp % s.dcp != 0) throw error(fmt::format("-dcp {}: must divide the tensor parallel size {}", s.dcp, s.tp));
    if (s.dcp > 1 && (m.count(layer_kind::swa) > 0 || m.count(layer_kind::chunked) > 0)) {
        throw error("-dcp: sliding-window layers require decode context parallel size 1");
    }
    if (s.max_num_batched_tokens < s.max_num_seqs) {
        throw error(fmt::format("max_num_batched_tokens ({}) must be greater than or equal to max_num_seqs ({}).",
                                s.max_num_batched_tokens, s.max_num_seqs));
    }
    const uint64_t derived = detail::vllm_derived_max_model_len(m);
    if (s.max_model_len > 0 && derived > 0 && uint64_t(s.max_model_len) > derived) {
        throw error(fmt::format("User-specified max_model_len ({}) is greater than the derived max_model_len "
                                "(max_position_embeddings={}{}) (set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 to override)",
                                s.max_model_len, m.n_ctx_train, derived != m.n_ctx_train
                                    ? fmt::format(", rope_scaling {}: {}", rope_text(m), derived) : std::string()));
    }
}

// EngineArgs.get_batch_defaults (API server), the rules' utilization, mamba mode, block size 16.
vllm_settings resolve(const model_desc & m, vllm_settings s, const device_spec & gpu, vllm_plan & p) {
    if (s.gpu_memory_utilization == 0) {
        // the default changes a verdict, so it is named with its release (docs/rules/vllm-overhead.md §1)
        s.gpu_memory_utilization = s.rules == vllm_rules::v2026 ? 0.92 : 0.9;
        p.notes.push_back(fmt::format("--gpu-memory-utilization {}: vLLM's default under the {} rules (CacheConfig "
                                      "gpu_memory_utilization; 0.92 from v0.24, 0.9 before)", s.gpu_memory_utilization,
                                      vllm_rules_key(s.rules)));
    }
    std::string lower = gpu.name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    const bool big = gpu.memory_bytes >= (70ull << 30) && lower.find("a100") == std::string::npos;
    if (s.usage_context != "api" && s.usage_context != "llm") {
        throw error(fmt::format("--usage-context '{}': expected api (vllm serve) or llm (the offline LLM class)", s.usage_context));
    }
    const bool llm = s.usage_context == "llm"; // UsageContext.LLM_CLASS: default_max_num_batched_tokens's first column
    const bool seqs_default = s.max_num_seqs == 0, mnbt_default = s.max_num_batched_tokens == 0;
    if (seqs_default) s.max_num_seqs = big ? 1024 : 256;
    if (mnbt_default) s.max_num_batched_tokens = big ? (llm ? 16384 : 8192) : (llm ? 8192 : 2048);
    if (seqs_default || mnbt_default) {
        // EngineArgs.get_batch_defaults (vllm/engine/arg_utils.py): by the device's memory (>= 70 GiB and not an A100)
        // and the usage context; max_num_seqs sizes the sampler's dummy run and the graphs, and a hybrid model's
        // Mamba blocks must hold it
        p.notes.push_back(fmt::format("{}{}{}: vLLM's default{} for {} ({}), usage context {} (EngineArgs.get_batch_defaults)",
                                      seqs_default ? fmt::format("--max-num-seqs {}", s.max_num_seqs) : "",
                                      seqs_default && mnbt_default ? ", " : "",
                                      mnbt_default ? fmt::format("--max-num-batched-tokens {}", s.max_num_batched_tokens) : "",
                                      seqs_default && mnbt_default ? "s" : "", gpu.name,
                                      big ? "70 GiB or more, not an A100" : "under 70 GiB or an A100",
                                      llm ? "llm (the LLM class)" : "api (vllm serve)"));
    }
    // DeepSeek-V3.2 / GLM-5 (an indexer beside the latent): DeepseekV32ForCausalLM.verify_and_update_config
    // (vllm/model_executor/models/config.py) maps any fp8 kv-cache dtype to fp8_ds_mla and bfloat16 to auto; the
    // sparse-MLA backends take block 64 only (get_supported_kernel_block_sizes), vllm-frontier.md §2.1.
    bool indexer = false, compressed = false;
    for (const auto & layer : m.caches) {
        for (const auto & c : layer) indexer |= c.kind == cache_kind::indexer, compressed |= c.kind == cache_kind::compressed;
    }
    const bool dsa = indexer && !compressed && m.count(layer_kind::mla) > 0;
    if (dsa && s.kv_cache_dtype.starts_with("fp8") && s.kv_cache_dtype != "fp8_ds_mla" &&
        s.kv_cache_dtype != "fp8_per_token_head") {
        p.notes.push_back(fmt::format("--kv-cache-dtype {}: Using custom fp8 kv-cache format for DeepSeekV3.2 (fp8_ds_mla, "
                                      "656 B per token per layer)", s.kv_cache_dtype));
        s.kv_cache_dtype = "fp8_ds_mla";
    }
    if (dsa && s.kv_cache_dtype == "bfloat16") s.kv_cache_dtype = "auto";
    // MiniMax-M3's MSA (index keys beside full attention; vllm/models/minimax_m3/common/sparse_attention.py and
    // indexer.py @545393a3, vllm-frontier.md §6): MiniMaxM3SparseBackend and MiniMaxM3IndexerBackend take block 128
    // only (get_supported_kernel_block_sizes) and KV dtypes bfloat16 / fp8 / fp8_e4m3 / fp8_e5m2 only.
    const bool msa = indexer && !compressed && m.count(layer_kind::mla) == 0 && !is_hybrid(m);
    if (msa) {
        const std::string & d = s.kv_cache_dtype;
        if (d != "auto" && d != "bfloat16" && d != "fp8" && d != "fp8_e4m3" && d != "fp8_e5m2") {
            throw error(fmt::format("vllm: --kv-cache-dtype {}: the MiniMax-M3 sparse attention backend (MINIMAX_M3_SPARSE) "
                                    "supports bfloat16, fp8, fp8_e4m3 and fp8_e5m2 only", d));
        }
        if (s.block_size == 0) {
            s.block_size = 128;
            p.notes.push_back("block size 128: the MiniMax-M3 sparse attention and indexer backends support 128 only; "
                              "index keys bf16 (indexer_kv_dtype default), 2 B per value whatever --kv-cache-dtype is");
        } else if (s.block_size != 128) {
            throw error(fmt::format("vllm: --block-size {}: the MiniMax-M3 sparse attention backend supports block size "
                                    "128 only", s.block_size));
        }
    }
    if (compressed) { // _resolve_dsv4_kv_cache_dtype (vllm/models/deepseek_v4/attention.py): FlashMLA needs fp8
        if (!s.kv_cache_dtype.starts_with("fp8")) {
            throw error(fmt::format("vllm: AssertionError: DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got {}",
                                    s.kv_cache_dtype));
        }
        s.kv_cache_dtype = "fp8_ds_mla";
        if (s.block_size == 0) {
            s.block_size = 256;
            p.notes.push_back("block size 256 assumed (every published DeepSeek-V4 command passes --block-size 256)");
        }
    }
    if (s.block_size == 0) {
        s.block_size = dsa ? 64 : 16;
        if (dsa) p.notes.push_back("block size 64: the sparse-MLA and indexer backends support 64 only");
        else if (m.count(layer_kind::mla) > 0) p.notes.push_back("block size 16 assumed; FlashMLA backends prefer 64 (--block-size 64)");
    }
    const bool hybrid = is_hybrid(m);
    if (hybrid && s.enable_prefix_caching && s.rules != vllm_rules::v2026) {
        p.warnings.push_back(fmt::format("prefix caching is disabled for hybrid models under the {} rules", vllm_rules_key(s.rules)));
        s.enable_prefix_caching = false;
    }
    if (s.mamba_mode == mamba_cache_mode::automatic) {
        s.mamba_mode = hybrid && s.enable_prefix_caching ? mamba_cache_mode::align : mamba_cache_mode::none;
    }
    return s;
}

// vllm/distributed/utils.py get_pp_indices: num_layers // pp each, the remainder one each to the stages
// before the last (partitions[-2], partitions[-3], ...).
std::vector<uint32_t> pp_partition(uint32_t n_layer, uint32_t pp) {
    std::vector<uint32_t> parts(pp, n_layer / pp);
    for (uint32_t i = 2; i < n_layer % pp + 2; ++i) parts[pp - i] += 1;
    return parts;
}

// Weights on one GPU of a stage: its blocks / tp; embedding (first stage) and LM head (last stage, also the
// tied embedding when pp > 1) are vocab-parallel, / tp.
// A quantized checkpoint sized from its quantization_config: linear by linear (runtimes/common/quant.cpp).
uint64_t stage_weights(const model_desc & m, uint32_t tp, uint32_t pp_rank, uint32_t pp, uint32_t first, uint32_t n,
                       double cc) {
    if (detail::quant_sized(m)) {
        return detail::quant_rank_weights(m, tp, first, n, pp_rank == 0, pp_rank == pp - 1, m.tied_embeddings && pp > 1,
                                          detail::vllm_quant_target(cc)).total;
    }
    const uint32_t s = detail::torch_dtype_bytes(m.dtype, 2, "dtype");
    uint64_t b = 0;
    for (uint32_t il = first; il < first + n; ++il) b += detail::weight_bytes(m.weights.layers.at(il), s);
    if (pp_rank == 0) b += detail::weight_bytes(m.weights.token_embd, s) + detail::weight_bytes(m.weights.other, s);
    if (pp_rank == pp - 1) b += m.tied_embeddings && pp > 1 ? detail::weight_bytes(m.weights.token_embd, s) : detail::weight_bytes(m.weights.output, s);
    return b / tp;
}

// The drafter's weights on one GPU of the stage holding it (docs/rules/vllm-speculative.md §2), in the format the target
// is sized in ("quantization" defaults to the target's, vllm/config/speculative.py @f19b16d9). An estimate: only the
// MTP figure is checked, against one log (Qwen3.5-9B, "Model loading took" 17.66 -> 18.12 GiB).
// - mtp: n_predict x (the target's last decoder block, the MTP layer's shape + fc / eh_proj 2E x E + 3 norms of E,
//   counted whole on every rank); embedding and LM head shared with the target (llm_base_proposer.py
//   _maybe_share_embeddings / _maybe_share_lm_head: "Detected MTP model. Sharing target model ... weights").
// - eagle / eagle3: the head's decoder layers + fc (2E or 3E x E); embedding shared (absent or identical in published
//   heads); eagle3 keeps its own LM head (n_vocab x E / tp, "Detected EAGLE model with distinct lm_head weights").
// - draft_model: the whole draft model, embedding and LM head included (draft_model.py @01dd981d load_model: get_model of
//   the draft config, nothing shared).
uint64_t draft_weights(const model_desc & m, const vllm_settings & s, double cc) {
    const vllm_speculative & c = s.speculative;
    if (c.method == "mtp") {
        if (m.n_layer_mtp_apart == 0 || m.n_layer == 0) return 0;
        const uint64_t sb = detail::torch_dtype_bytes(m.dtype, 2, "dtype");
        const uint64_t block = stage_weights(m, s.tp, 1, 3, m.n_layer - 1, 1, cc);
        return uint64_t(m.n_layer_mtp_apart) * (block + (2ull * m.n_embd * m.n_embd + 3ull * m.n_embd) * sb);
    }
    if (!c.draft || !(c.method == "eagle" || c.method == "eagle3" || c.method == "draft_model")) return 0;
    const model_desc & d = *c.draft;
    if (d.n_layer == 0) return 0;
    const uint32_t dtp = c.draft_tensor_parallel_size ? c.draft_tensor_parallel_size : s.tp;
    if (c.method == "draft_model") return stage_weights(d, dtp, 0, 1, 0, d.n_layer, cc);
    const uint64_t sb = detail::torch_dtype_bytes(d.dtype, 2, "dtype");
    uint64_t b = stage_weights(d, dtp, 1, 3, 0, d.n_layer, cc) + (c.method == "eagle3" ? 3ull : 2ull) * d.n_embd * d.n_embd * sb;
    if (c.method == "eagle3") {
        // llama_eagle3.py: the first layer's q/k/v read [embeds, hidden] (2E wide), and the head's own lm_head has
        // draft_vocab_size rows (32000 in the published Llama-3.1 heads)
        const uint64_t qkv = uint64_t(d.n_head.at(0)) * d.head_dim_k.at(0) + 2ull * d.n_head_kv.at(0) * d.head_dim_k.at(0);
        b += qkv * d.n_embd * sb / dtp;
        b += uint64_t(c.draft_vocab_size ? c.draft_vocab_size : d.n_vocab) * d.n_embd * sb / dtp;
    }
    return b;
}

// The bundled vision tower's weights on one GPU of the first stage: vLLM loads it with the language model unless
// --language-model-only (vllm/config/multimodal.py language_model_only: the tower's modules are not created). Read
// from the checkpoint when its tensors were listed (weights.vision, already in weights.other: removed when skipped),
// else estimated from vision_config in bf16, sharded by TP (--mm-encoder-tp-mode weights, the default).
int64_t vision_weights_signed(const model_desc & m, const vllm_settings & s) {
    if (m.weights.exact) return s.language_model_only ? -int64_t(m.weights.vision.bytes / s.tp) : 0;
    if (!m.vision.present()) return 0;
    const bool given = m.weights.format.rfind("given", 0) == 0; // --weights-size: the checkpoint's bytes, tower included
    if (given) return s.language_model_only ? -int64_t(m.vision.n_params() * 2 / s.tp) : 0;
    if (s.language_model_only) return 0;
    return int64_t(m.vision.n_params() * 2 / s.tp);
}

// Warnings vLLM (or its kernels) would give for a KV dtype the GPU cannot run (RULES §4).
void warn_dtype(vllm_plan & p, double cc) {
    const vllm_settings & s = p.settings;
    const bool e4m3 = s.kv_cache_dtype == "fp8" || s.kv_cache_dtype == "fp8_e4m3" || s.kv_cache_dtype == "fp8_per_token_head";
    if (e4m3 && cc > 0 && cc < 8.9) {
        p.warnings.push_back(fmt::format(
            "--kv-cache-dtype {} on compute capability {:.1f} (< 8.9): the Triton attention path raises \"ValueError: type "
            "fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')\"; "
            "fp8_e5m2 works on sm80/86", s.kv_cache_dtype, cc));
    }
    if (s.kv_cache_dtype == "nvfp4") { // vllm-frontier.md §1: nvfp4_kv_cache_full_dim, no public log found
        p.warnings.push_back("--kv-cache-dtype nvfp4: the page of d/2 + d/16 B per head (nvfp4_kv_cache_full_dim) is an "
                             "estimate: no public vLLM log of an nvfp4 KV cache was found to check it");
    }
    if (s.kv_cache_dtype == "nvfp4" && cc > 0 && cc < 10.0) {
        p.warnings.push_back(fmt::format("--kv-cache-dtype nvfp4 needs a Blackwell GPU (compute capability 10.0+), got {:.1f}", cc));
    }
}

// Copies the layout's per-rank facts into the plan.
void take_layout(vllm_plan & p, const detail::vllm_layout & lay) {
    const vllm_settings & s = p.settings;
    p.notes.insert(p.notes.end(), lay.notes.begin(), lay.notes.end());
    p.block_size = lay.block_size;
    p.block_size_raised = lay.raised && lay.block_size != s.block_size;
    p.n_head_kv_rank = lay.n_head_kv_rank;
    p.attn_bytes_per_token = lay.attn1;
    p.mamba_conv_bytes = lay.mamba_conv;
    p.mamba_ssm_bytes = lay.mamba_ssm;
    p.mamba_state_bytes = lay.mamba_conv + lay.mamba_ssm;
    p.mamba_padding_pct = lay.padding_pct;
    p.page_bytes = lay.page;
    p.group_size = lay.group_size;
    for (const auto & g : lay.groups) p.padding_layers += g.n_padding;
}

// determine_available_memory per PP stage: requested - weights - activation - non-torch - graphs, or
// --kv-cache-memory-bytes verbatim; then that stage's blocks.
void budget_ranks(vllm_plan & p, const model_desc & m, const detail::vllm_layout & lay, const device_spec & gpu) {
    const vllm_settings & s = p.settings;
    const uint32_t world = s.tp * s.pp;
    const std::vector<uint32_t> parts = pp_partition(m.n_layer, s.pp);
    uint32_t first = 0;
    for (uint32_t r = 0; r < s.pp; ++r) {
        vllm_rank k;
        k.pp_rank = r;
        k.first_layer = first;
        k.n_layer = parts[r];
        first += parts[r];
        k.total_bytes = gpu.memory_bytes;
        k.requested_bytes = uint64_t(std::ceil(static_cast<long double>(gpu.memory_bytes) * s.gpu_memory_utilization));
        k.weights_bytes = stage_weights(m, s.tp, r, s.pp, k.first_layer, k.n_layer, p.compute_capability);
        if (s.cpu_offload_gb > 0) { // UVA offload of the decoder layers only (make_layers), up to int(gb x 2^30) B
            const uint64_t limit = uint64_t(s.cpu_offload_gb * double(1ull << 30));
            k.cpu_offload_bytes = std::min(limit, stage_weights(m, s.tp, 1, 3, k.first_layer, k.n_layer, p.compute_capability));
            k.weights_bytes -= k.cpu_offload_bytes;
        }
        if (r == s.pp - 1) { // the drafter runs after the target's last layer, on the last stage
            k.n_draft_layers = p.speculative.draft_kv_layers;
            k.draft_weights_bytes = p.speculative.draft_weights_bytes;
            k.weights_bytes += k.draft_weights_bytes;
        }
        if (r == 0) { // the vision tower loads with the first stage ("Model loading took"), unless text-only
            const int64_t vw = vision_weights_signed(m, s);
            k.vision_weights_bytes = uint64_t(std::max<int64_t>(0, vw));
            k.weights_bytes = uint64_t(std::max<int64_t>(0, int64_t(k.weights_bytes) + vw));
        }
        k.terms = vllm_overhead_terms(m, s, k.first_layer, k.n_layer, r == 0, r == s.pp - 1);
        for (const vllm_term & t : k.terms) {
            if (t.name == "activation") k.activation_bytes = t.bytes;
            if (t.name == "non-torch") k.non_torch_bytes = t.bytes;
            if (t.name == "CUDA graphs") k.cudagraph_bytes = t.bytes;
        }
        (void)world;
        k.available_kv_bytes = s.kv_cache_memory_bytes
            ? int64_t(s.kv_cache_memory_bytes)
            : int64_t(k.requested_bytes) - int64_t(k.weights_bytes + k.activation_bytes + k.non_torch_bytes + k.cudagraph_bytes);
        const uint64_t bb = detail::vllm_stage_block_bytes(lay, k.first_layer, k.n_layer + k.n_draft_layers, k.n_tensors);
        k.num_blocks = k.available_kv_bytes > 0 && bb > 0 ? uint64_t(k.available_kv_bytes) / bb : 0;
        p.ranks.push_back(k);
    }
}

// The speculative part in words: what is a vLLM rule checked against a log, what is an estimate.
void note_speculative(vllm_plan & p) {
    const vllm_spec_plan & sp = p.speculative;
    if (sp.method.empty()) return;
    std::string line = fmt::format("speculative decoding ({}, {} draft token{}):", sp.method, sp.num_speculative_tokens,
                                   sp.num_speculative_tokens == 1 ? "" : "s");
    if (sp.draft_kv_layers > 0) {
        line += fmt::format(" the drafter's {} attention layer{} the KV pool, {} B per token per GPU (vLLM rule: "
                            "its layers' KV specs share the model's blocks)", sp.draft_kv_layers,
                            sp.draft_kv_layers == 1 ? " joins" : "s join", sp.draft_kv_bytes_per_token);
    } else {
        line += " no drafter model, no draft weights or KV";
    }
    if (sp.draft_weights_bytes > 0) {
        line += fmt::format("; drafter weights {} GiB per GPU (estimate, in \"Model loading took\")", gib(double(sp.draft_weights_bytes)));
    }
    if (sp.mamba_blocks_added > 0) {
        line += fmt::format("; each mamba group holds {} more block{} per request (num_speculative_blocks)", sp.mamba_blocks_added,
                            sp.mamba_blocks_added == 1 ? "" : "s");
    }
    if (sp.mamba_conv_rows_added > 0) line += fmt::format(", and each conv state {} more rows", sp.mamba_conv_rows_added);
    p.notes.push_back(line);
    p.notes.push_back("speculative decoding: the activation and CUDA-graph inputs do not include the drafter's dummy run "
                      "and graphs (kvfit estimates; give --activation-memory / --cudagraph-memory from a log)");
}

// Says what the budget was made of: each non-KV term of the first stage with its basis and source (vllm_term), the
// encoder budget line vLLM prints, and the vision tower's weights. Estimates are the plan's assumptions.
void note_inputs(vllm_plan & p, const model_desc & m) {
    const vllm_settings & s = p.settings;
    const vllm_rank & r0 = p.ranks[0];
    if (s.cpu_offload_gb > 0) {
        uint64_t most = 0;
        for (const auto & k : p.ranks) most = std::max(most, k.cpu_offload_bytes);
        p.notes.push_back(fmt::format("--cpu-offload-gb {}: {} GiB of decoder-layer weights per GPU in pinned host memory, "
                                      "read over PCIe on every step (vLLM's UVA offloader: whole parameters until {} B, "
                                      "model_executor/offloader/uva.py); not in \"Model loading took\"", s.cpu_offload_gb,
                                      gib(double(most)), uint64_t(s.cpu_offload_gb * double(1ull << 30))));
    }
    p.terms = r0.terms;
    if (s.kv_cache_memory_bytes) {
        p.notes.push_back(fmt::format("reserved {} GiB memory for KV Cache as specified by kv_cache_memory_bytes "
                                      "(--gpu-memory-utilization and the terms below are ignored)", gib(double(s.kv_cache_memory_bytes))));
        return;
    }
    if (m.vision.present()) {
        p.notes.push_back(s.language_model_only
            ? "vision tower: not loaded, not profiled (--language-model-only)"
            : fmt::format("vision tower: {} blocks of {} wide{}, {} GiB of weights per GPU ({}); its encoder is {}",
                          m.vision.depth, m.vision.hidden, m.weights.exact ? "" : " (weights estimated from vision_config, bf16)",
                          gib(double(r0.vision_weights_bytes)), m.weights.exact ? "read from the checkpoint"
                          : m.weights.format.rfind("given", 0) == 0 ? "counted in --weights-size" : "estimate",
                          s.skip_mm_profiling ? "not profiled (--skip-mm-profiling)"
                          : s.limit_mm_images == 0 ? "not profiled (--limit-mm-per-prompt: no images, no video)"
                                                   : "profiled at startup (below)"));
        if (!m.weights.exact && !s.language_model_only && m.weights.format.rfind("given", 0) != 0) {
            p.assumptions.push_back(fmt::format("vision tower weights {} GiB per GPU estimated from vision_config (bf16; "
                                                "--language-model-only if the tower is not served)",
                                                gib(double(r0.vision_weights_bytes))));
        }
    }
    for (const vllm_term & t : r0.terms) {
        if (t.name.rfind("activation:", 0) == 0 && t.bytes == 0) continue;
        p.notes.push_back(fmt::format("{} {} GiB per GPU [{}; {}]{}", t.name, gib(double(t.bytes)), t.basis, t.source,
                                      t.how.empty() ? "" : ": " + t.how));
        if (t.basis == "estimate" && t.name.find(':') == std::string::npos) {
            p.assumptions.push_back(fmt::format("{} {} GiB per GPU is a kvfit estimate ({}); give {} from a log", t.name,
                                                gib(double(t.bytes)), t.how,
                                                t.name == "activation" ? "--activation-memory"
                                                : t.name == "non-torch" ? "--non-torch-memory" : "--cudagraph-memory"));
        }
    }
}

// The max_model_len check, the binary search for the largest length that fits (auto-fit under -1), the
// per-request blocks, concurrency and both token lines. Returns true when one request does not fit.
bool fit_length(vllm_plan & p, const model_desc & m, detail::vllm_layout & lay) {
    const vllm_settings & s = p.settings;
    // need(len) on the worst worker: block bytes of the stage x blocks one request holds.
    auto need_exceeds = [&](uint64_t len, uint64_t & need_out) {
        detail::vllm_fill_per_request(lay, s, len);
        uint64_t blocks = 0;
        for (const auto & g : lay.groups) blocks += g.per_request_blocks;
        bool over = false;
        need_out = 0;
        for (const auto & k : p.ranks) {
            uint32_t t = 0;
            const uint64_t need = detail::vllm_stage_block_bytes(lay, k.first_layer, k.n_layer + k.n_draft_layers, t) * blocks;
            need_out = std::max(need_out, need);
            over |= k.available_kv_bytes <= 0 || int64_t(need) > k.available_kv_bytes;
        }
        return over;
    };
    const uint64_t derived = detail::vllm_derived_max_model_len(m);
    const uint64_t limit = derived ? derived : (1ull << 24);
    uint64_t ignore = 0;
    // the largest len in [1, limit] that fits: vLLM's own binary search (_auto_fit_max_model_len, and the estimate in
    // _check_enough_kv_cache_memory's message), which is search.h's
    const uint64_t lo = largest_fitting(1, limit, 1, [&](uint64_t len) { return !need_exceeds(len, ignore); }).value_or(0);
    p.max_model_len_fit = lo;
    const bool auto_fit = s.max_model_len < 0;
    const uint64_t fallback = derived ? detail::vllm_default_max_model_len(m) : limit;
    p.max_model_len = auto_fit ? std::max<uint64_t>(lo, 1) : s.max_model_len > 0 ? uint64_t(s.max_model_len) : fallback;
    // a length the config's rope scaling derived (or longrope's original length) is said where it is taken
    if (derived && (auto_fit || s.max_model_len == 0)) {
        if (derived != m.n_ctx_train) {
            // yarn scales original_max_position_embeddings, other types max_position_embeddings
            const auto yarn = std::find_if(m.rope_scaling.begin(), m.rope_scaling.end(),
                                           [](const model_desc::rope_scaling_entry & e) { return e.type == "yarn" && e.original_ctx > 0; });
            p.notes.push_back(fmt::format("derived max_model_len {} = {} {} x the config's rope_scaling ({}; config.py "
                                          "_get_and_verify_max_len)", derived,
                                          yarn != m.rope_scaling.end() ? "original_max_position_embeddings" : "max_position_embeddings",
                                          yarn != m.rope_scaling.end() ? yarn->original_ctx : m.n_ctx_train, rope_text(m)));
        }
        if (s.max_model_len == 0 && fallback != derived) {
            p.notes.push_back(fmt::format("default --max-model-len {}: longrope's original_max_position_embeddings (of {} "
                                          "derived; config.py _get_and_verify_max_len)", fallback, derived));
        }
    }
    p.settings.max_model_len = int64_t(p.max_model_len);
    if (auto_fit && lo > 0) {
        p.notes.push_back(lo < limit ? fmt::format("Auto-fit max_model_len: reduced from {} to {} to fit in available GPU "
                                                   "memory ({} GiB available for KV cache)", limit, lo, gib(double(p.available_kv_bytes)))
                                     : fmt::format("Auto-fit max_model_len: full model context length {} fits", limit));
    }

    const bool over = need_exceeds(p.max_model_len, p.need_bytes);
    p.groups = lay.groups;
    for (const auto & g : p.groups) {
        p.per_request_blocks += g.per_request_blocks;
        if (g.kind == "mamba") p.mamba_blocks_per_request += g.per_request_blocks;
    }
    p.max_concurrency = double(p.num_gpu_blocks) / double(p.per_request_blocks);
    p.kv_cache_tokens = uint64_t(p.max_concurrency * double(p.max_model_len));
    uint32_t min_block = UINT32_MAX;
    for (const auto & g : p.groups) min_block = std::min(min_block, g.block_size);
    p.kv_cache_tokens_v2025 = p.num_gpu_blocks / p.groups.size() * min_block;

    return over;
}

// vLLM's startup errors: no memory, max_model_len over the pool, max_num_seqs over the mamba blocks.
void check_startup(vllm_plan & p, bool over) {
    const vllm_settings & s = p.settings;
    // vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory (vllm-project/vllm main 2026, docs/rules/
    // vllm-frontier.md §7.1); the 2025 builds print "models's" and no parenthetical.
    const bool v26 = s.rules == vllm_rules::v2026;
    const char * see = " See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.";
    if (p.available_kv_bytes <= 0) {
        p.errors.push_back(fmt::format("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                                       "when initializing the engine.{}", v26 ? see : ""));
    } else if (over) {
        const std::string estimate = p.max_model_len_fit > 0
            ? fmt::format(" Based on the available memory, the estimated maximum model length is {}.", p.max_model_len_fit) : "";
        p.errors.push_back(fmt::format(
            "To serve at least one request with the {} max seq len ({}), ({} GiB KV cache is needed, which is larger than "
            "the available KV cache memory ({} GiB).{} Try increasing `gpu_memory_utilization`{} or decreasing "
            "`max_model_len` when initializing the engine.{}", v26 ? "model's" : "models's", p.max_model_len,
            gib(double(p.need_bytes)), gib(double(p.available_kv_bytes)), estimate,
            v26 ? " (which also controls CPU memory on the CPU backend)" : "", v26 ? see : ""));
    }
    // vllm/config/compilation.py resolve_cudagraph_mode_and_sizes (PR #32936, raising since PR #38270, v0.19+;
    // vllm-frontier.md §7.2): max_num_seqs against the pool's num_blocks, not divided by the mamba groups, and only
    // when CUDA graphs are captured (not under --enforce-eager).
    if (p.mamba_blocks_per_request > 0 && p.errors.empty()) {
        const bool checked = !s.enforce_eager && s.rules == vllm_rules::v2026;
        if (checked && uint64_t(s.max_num_seqs) > p.num_gpu_blocks) {
            p.errors.push_back(fmt::format(
                "max_num_seqs ({0}) exceeds available Mamba cache blocks ({1}). Each decode sequence requires one Mamba "
                "cache block, so CUDA graph capture cannot proceed. Please lower max_num_seqs to at most {1} or increase "
                "gpu_memory_utilization.", s.max_num_seqs, p.num_gpu_blocks));
        }
        // The profiling false positive (vllm-frontier.md §7.2): profile_cudagraph_memory builds a dummy KV config of
        // num_gpu_blocks_override = max_cudagraph_capture_size blocks (vllm/v1/worker/gpu_model_runner.py; one block per
        // sequence only since PR #48483, merged 2026-07-13), and max_cudagraph_capture_size = min(max_num_seqs x
        // (1 + num_speculative_tokens) x 2, 512, max_num_batched_tokens) (vllm/config/vllm.py _set_cudagraph_sizes). Builds whose
        // profiling path runs the check above without PR #38270's is_profiling guard stop with vLLM's own message.
        const uint64_t capture = p.speculative.max_cudagraph_capture_size;
        if (checked && uint64_t(s.max_num_seqs) > capture && p.errors.empty()) {
            p.warnings.push_back(fmt::format(
                "vLLM builds before PR #48483 (2026-07-13) whose CUDA-graph memory profiling runs the Mamba check (no "
                "is_profiling guard) stop while profiling, on a dummy KV cache of max_cudagraph_capture_size = {1} blocks: "
                "\"max_num_seqs ({0}) exceeds available Mamba cache blocks ({1}). Each decode sequence requires one Mamba "
                "cache block, so CUDA graph capture cannot proceed. Please lower max_num_seqs to at most {1} or increase "
                "gpu_memory_utilization.\"", s.max_num_seqs, capture));
        }
        if (p.errors.empty() && uint64_t(s.max_num_seqs) * p.mamba_blocks_per_request > p.num_gpu_blocks) {
            p.warnings.push_back(fmt::format(
                "max_num_seqs {} x {} mamba blocks per request exceed the {} blocks: vLLM starts, but at most {} requests "
                "run at once", s.max_num_seqs, p.mamba_blocks_per_request, p.num_gpu_blocks,
                p.num_gpu_blocks / p.mamba_blocks_per_request));
        }
    }
    // One line per layer type, as _get_kv_cache_groups_uniform_page_size logs it: pad = group_size - n % group_size.
    std::vector<std::string> seen;
    for (const auto & g : p.groups) {
        if (std::find(seen.begin(), seen.end(), g.kind) != seen.end()) continue;
        seen.push_back(g.kind);
        uint32_t pads = 0, n_type = 0;
        for (const auto & h : p.groups) {
            if (h.kind == g.kind) pads += h.n_padding, n_type += h.n_layer;
        }
        if (pads > 0) {
            p.notes.push_back(fmt::format("Add {} padding layers, may waste at most {:.2f}% KV cache memory", pads,
                                          100.0 * pads / n_type));
        }
    }
}

} // namespace

vllm_plan plan_vllm(const model_desc & m, const vllm_settings & s_in, const device_spec & gpu, double cc) {
    vllm_plan p;
    p.device_name = gpu.name;
    p.compute_capability = cc;
    p.settings = resolve(m, s_in, gpu, p);
    detail::vllm_resolve_speculative(m, p.settings, p.notes);
    const model_desc ma = detail::vllm_with_draft_layers(m, p.settings, p.speculative, p.warnings);
    p.warnings.insert(p.warnings.end(), p.settings.speculative.warnings.begin(), p.settings.speculative.warnings.end());
    p.notes.insert(p.notes.end(), p.settings.compilation_notes.begin(), p.settings.compilation_notes.end());
    if (p.settings.enforce_eager && !p.settings.cudagraph_mode.empty() && p.settings.cudagraph_mode != "NONE") {
        // vllm/config/vllm.py VllmConfig.__post_init__: enforce_eager sets compilation_config.cudagraph_mode to NONE
        p.notes.push_back(fmt::format("--enforce-eager wins over --compilation-config cudagraph_mode {}: vLLM captures no "
                                      "CUDA graphs (vllm/config/vllm.py VllmConfig.__post_init__)", p.settings.cudagraph_mode));
    }
    check_input(ma, p.settings);
    p.hybrid = is_hybrid(m);
    warn_dtype(p, cc);
    detail::vllm_layout lay = detail::vllm_kv_layout(ma, p.settings);
    for (uint32_t il = m.n_layer; il < ma.n_layer; ++il) {
        if (lay.layer_page[il] && lay.block_size) p.speculative.draft_kv_bytes_per_token += lay.layer_page[il] / lay.block_size;
    }
    p.speculative.draft_weights_bytes = draft_weights(m, p.settings, cc);
    // vllm/config/vllm.py _set_cudagraph_sizes: min(max_num_seqs x decode_query_len x 2, 512, max_num_batched_tokens),
    // decode_query_len = 1 + num_speculative_tokens (vllm #32324 quotes it; the Qwen3.6-27B MTP-3 log shows 16 for
    // max_num_seqs 2)
    p.speculative.max_cudagraph_capture_size = std::min<uint64_t>(
        {uint64_t(p.settings.max_num_seqs) * (1 + p.settings.speculative.num_speculative_tokens) * 2, 512,
         p.settings.max_num_batched_tokens});
    p.speculative.weights_estimate = !p.settings.speculative.method.empty();
    note_speculative(p);
    take_layout(p, lay);
    budget_ranks(p, m, lay, gpu);
    note_inputs(p, m);
    p.num_gpu_blocks = p.ranks[0].num_blocks;
    p.available_kv_bytes = p.ranks[0].available_kv_bytes;
    for (const auto & k : p.ranks) {
        p.num_gpu_blocks = std::min(p.num_gpu_blocks, k.num_blocks);
        p.available_kv_bytes = std::min(p.available_kv_bytes, k.available_kv_bytes);
    }
    uint32_t tensors_all = 0;
    p.block_bytes = detail::vllm_stage_block_bytes(lay, 0, ma.n_layer, tensors_all);
    check_startup(p, fit_length(p, m, lay));
    return p;
}

std::vector<vllm_placement> vllm_placements(const model_desc & m, const vllm_settings & s, const device_spec & gpu,
                                            double cc, uint32_t gpus_per_node, uint32_t nodes) {
    struct cand { uint32_t tp, pp, dp; std::string why; };
    std::vector<cand> cands;
    if (nodes <= 1) {
        for (uint32_t tp = gpus_per_node; tp >= 1; --tp) {
            if (gpus_per_node % tp == 0) {
                cands.push_back({tp, 1, gpus_per_node / tp,
                                 gpus_per_node / tp > 1 ? fmt::format("TP {} x DP {} on one node", tp, gpus_per_node / tp)
                                                        : fmt::format("TP {} on one node", tp)});
            }
        }
    } else {
        cands.push_back({gpus_per_node, nodes, 1, fmt::format("TP {} within each node, PP {} across nodes", gpus_per_node, nodes)});
        cands.push_back({gpus_per_node, 1, nodes, fmt::format("TP {} within each node, DP {} across nodes", gpus_per_node, nodes)});
    }
    std::vector<vllm_placement> out;
    for (const auto & c : cands) {
        vllm_settings t = s;
        t.tp = c.tp, t.pp = c.pp, t.dp = c.dp;
        try {
            vllm_placement pl{c.tp, c.pp, c.dp, c.why, plan_vllm(m, t, gpu, cc), 0, false};
            pl.total_concurrency = pl.plan.max_concurrency * c.dp;
            pl.fits = pl.plan.fits() && pl.total_concurrency >= s.concurrency;
            out.push_back(std::move(pl));
        } catch (const error &) {
            // a TP size the heads do not divide: vLLM would refuse it, so it is not a placement
        }
    }
    return out;
}

} // namespace kvfit

namespace kvfit::detail {

uint64_t vllm_derived_max_model_len(const model_desc & m) {
    uint64_t derived = m.n_ctx_train;
    // "Gemma3's max_model_len (128K) is already scaled by RoPE scaling": a model_type containing gemma3 is skipped
    if (derived == 0 || m.rope_scaling.empty() || m.architecture.find("gemma3") != std::string::npos) return derived;
    double factor = 1.0;
    for (const auto & e : m.rope_scaling) { // one per layer type in transformers v5's nested rope_parameters
        if (e.type == "su" || e.type == "longrope" || e.type == "llama3") continue;
        if (e.factor < 0) {
            throw error("rope_scaling factor is not a number: vLLM multiplies the derived max_model_len by it "
                        "(_get_and_verify_max_len) and fails");
        }
        if (e.factor > 0) factor = e.factor;
        if (e.type == "yarn") {
            if (e.original_ctx == 0) {
                throw error("rope_scaling yarn without original_max_position_embeddings: vLLM reads it for the derived "
                            "max_model_len (_get_and_verify_max_len) and fails");
            }
            derived = e.original_ctx;
        }
    }
    return uint64_t(double(derived) * factor); // int(derived_max_model_len) after the float product
}

uint64_t vllm_default_max_model_len(const model_desc & m) {
    // "if max_model_len is None": a longrope model starts at original_max_position_embeddings (Phi-3: 4,096 of 131,072),
    // the config's top-level attribute, else the derived length
    for (const auto & e : m.rope_scaling) {
        if (e.type == "longrope" && m.original_ctx_top > 0) return m.original_ctx_top;
    }
    return vllm_derived_max_model_len(m);
}

} // namespace kvfit::detail
