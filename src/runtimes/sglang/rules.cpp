// SGLang's static memory pool (RULES §5): KVCacheConfigurator._profile_available_bytes,
// _handle_max_mamba_cache, DefaultPoolConfigurator._compute_cell_size (sglang/srt/mem_cache/pool_configurator.py,
// 2026 main), and the max_running_requests default.
#include "kvfit/sglang.h"
#include "runtimes/common/torch.h"
#include "runtimes/common/quant.h"
#include "core/util.h"

#include "kvfit/error.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>

namespace kvfit {

using detail::cdiv;

namespace {

// The model class SGLang keys its per-model choices on (hf_config.architectures[0]): config.json's, or for a GGUF the
// class transformers' GGUF loader gives its general.architecture (llama -> LlamaForCausalLM, qwen3next ->
// Qwen3NextForCausalLM); "" when neither is known.
std::string sglang_model_class(const model_desc & m) {
    if (!m.hf_architecture.empty()) return m.hf_architecture;
    if (m.gguf_architecture == "llama") return "LlamaForCausalLM";
    if (m.gguf_architecture == "qwen3next") return "Qwen3NextForCausalLM";
    return "";
}

// Weights on one TP rank: everything / tp (linear layers and the vocab-parallel embedding and head).
uint64_t rank_weights(const model_desc & m, uint32_t tp) {
    if (detail::quant_sized(m)) return detail::quant_rank_weights(m, tp, 0, m.n_layer, true, true, false, {}).total;
    const uint32_t s = detail::torch_dtype_bytes(m.dtype, 2, "dtype");
    auto bytes = [&](const weight_group & g) { return detail::weight_bytes(g, s); };
    uint64_t b = bytes(m.weights.token_embd) + bytes(m.weights.output) + bytes(m.weights.other);
    for (const auto & g : m.weights.layers) b += bytes(g);
    return b / tp;
}

// The KV layout of one rank: the budget's cell (DefaultPoolConfigurator._compute_cell_size) and what the pool
// allocates per token. MHA: H_kv(attn_tp) x (D_k + D_v) x s per full layer, sliding layers weighted by
// swa_full_tokens_ratio; MLA: (kv_lora_rank + rope) x s per layer, not divided by tp. DSA (DeepSeek-V3.2, GLM-5;
// sglang-frontier.md §1.1, NSATokenToKVPool in mem_cache/memory_pool.py): the budget adds index_head_dim + 4 B per
// 128 (132) per layer, while the pool stores the fp8 latent as 512 + 4 x 4 + 64 x 2 = 656 B (1152 in bf16).
struct sglang_cell {
    uint64_t budget = 0, alloc = 0;
    uint64_t full = 0, swa = 0; ///< K+V bytes per token of the full layers and of the sliding layers, all of them
};

sglang_cell cell_bytes(const model_desc & m, const sglang_settings & s, uint32_t es, uint32_t attn_tp, uint32_t model_s) {
    double cell = 0;
    uint64_t alloc = 0, full = 0, swa = 0;
    bool approx = false;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const layer_cache * a = m.attention_cache(il);
        if (a == nullptr) continue;
        if (a->kind == cache_kind::latent) {
            cell += double(a->width_k()) * es;
            const uint64_t rope = m.n_rot_mla, lora = a->width_k() > rope ? a->width_k() - rope : a->width_k();
            uint64_t latent = a->width_k() * es;
            uint64_t idx = 0;
            for (const layer_cache & c : m.caches[il]) {
                if (c.kind == cache_kind::indexer && c.ratio == 1) idx += c.width_k() + cdiv(c.width_k(), 128) * 4;
            }
            if (idx > 0 && es == 1) latent = lora + lora / 128 * 4 + rope * 2; // kv_cache_dim: 656 for DeepSeek-V3.2
            cell += double(idx);
            alloc += latent + idx;
            continue;
        }
        const uint64_t heads = std::max<uint32_t>(1, a->n_head / attn_tp);
        double per = double(heads * (a->head_dim_k + a->head_dim_v) * es);
        // MiniMax sparse attention (MSA, MiniMax-M3; pool_configurator.py DefaultPoolConfigurator._compute_cell_size,
        // is_minimax_sparse branch, sglang-frontier.md §6): one indexer head of sparse_index_dim per sparse layer in the
        // model dtype, whatever --kv-cache-dtype is; K and V on the layers that keep an index value, K only on
        // get_minimax_sparse_disable_value_layer_ids (every sparse layer of MiniMax-M3, models/minimax_m3.py).
        for (const layer_cache & c : m.caches[il]) {
            if (c.kind == cache_kind::indexer && c.ratio == 1) per += double((c.width_k() + c.width_v()) * model_s);
        }
        cell += m.is_swa(il) ? s.swa_full_tokens_ratio * per : per;
        approx |= m.is_swa(il);
        alloc += uint64_t(per);
        (m.is_swa(il) ? swa : full) += uint64_t(per);
    }
    sglang_cell c;
    c.budget = uint64_t(std::ceil(cell - 1e-6)); // 0.8 x 204,800 is 163,840 up to float error
    c.alloc = approx ? c.budget : alloc;
    c.full = full, c.swa = swa;
    return c;
}

bool is_dsa(const model_desc & m) {
    bool indexer = false, compressed = false;
    for (const auto & layer : m.caches) {
        for (const auto & c : layer) indexer |= c.kind == cache_kind::indexer, compressed |= c.kind == cache_kind::compressed;
    }
    return indexer && !compressed && m.count(layer_kind::mla) > 0;
}

// DeepSeek-V4 (DSV4PoolConfigurator, python/sglang/srt/mem_cache/pool_configurator.py, index id 54491073764;
// get_compress_state_ring_size in mem_cache/deepseek_v4_memory_pool.py; SGLANG_DSV4_COMPRESS_STATE_DTYPE "float32" and
// SGLANG_OPT_USE_ONLINE_COMPRESS off by default, environ.py; sglang-frontier.md §6). Without speculative decoding or
// HiSparse: kv = nope + 2 rope + 8 B (fp8 nope, bf16 rope, scales: 584), indexer = d + d/128 x 4 (132), rings 8 (C4)
// and 128 (C128), fp32 states; bytes_per_full_token = r kv L + kv L4 / 4 + kv L128 / 128 + idx L4 / 4
// + r (8 / page)(2 x 2 x 512 x 4) L4 + r (8 / page)(2 x 2 x d x 4) L4, r = --swa-full-tokens-ratio; the C128 state is
// a fixed (max_running_requests + 1) x 128 + 129 rows (rounded up to 128) x 2 x 512 x 4 B per C128 layer.
struct dsv4_pool {
    double bytes_per_full_token = 0;
    uint64_t c128_fixed = 0, full = 0, swa = 0, c4 = 0, c128 = 0, c4_state = 0;
};

uint64_t dsv4_c128_fixed(uint64_t max_running_requests, uint64_t n128, uint64_t head_dim) {
    if (n128 == 0) return 0;
    const uint64_t slots = max_running_requests + 1, ring = 128;
    const uint64_t rows = cdiv(slots * ring + ring + 1, 128) * 128;
    return rows * 2 * head_dim * 4 * n128;
}

dsv4_pool dsv4_pool_sizes(const model_desc & m, const sglang_settings & s, uint64_t available, uint32_t attn_dp) {
    uint64_t n4 = 0, n128 = 0, hd = 0, idx = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const layer_cache & c : m.caches[il]) {
            if (c.kind == cache_kind::window) hd = c.head_dim_k;
            if (c.kind == cache_kind::compressed) n4 += c.ratio == 4, n128 += c.ratio == 128;
            if (c.kind == cache_kind::indexer) idx = c.width_k();
        }
    }
    const uint64_t rope = m.n_rot_mla ? m.n_rot_mla : 64, nope = hd > rope ? hd - rope : hd;
    const double kv = double(nope + 2 * rope + 8), ib = double(idx + idx / 128 * 4), r = s.swa_full_tokens_ratio;
    const double c4_ratio = 8.0 / double(s.page_size);
    dsv4_pool d;
    d.bytes_per_full_token = r * kv * m.n_layer + kv * double(n4) / 4 + kv * double(n128) / 128 + ib * double(n4) / 4 +
                             r * c4_ratio * double(2 * 2 * hd * 4) * double(n4) +
                             r * c4_ratio * double(2 * 2 * idx * 4) * double(n4);
    if (s.max_running_requests) {
        d.c128_fixed = dsv4_c128_fixed(s.max_running_requests / attn_dp, n128, hd);
    } else { // _get_c128_state_fixed_bytes_for_token_capacity
        const uint64_t cap = uint64_t(double(available) / d.bytes_per_full_token);
        const double est = std::clamp(double(int64_t(double(cap) / double(std::max<uint64_t>(1, s.context_length)) * 512)),
                                      2048.0, 4096.0);
        d.c128_fixed = dsv4_c128_fixed(std::min<uint64_t>(uint64_t(est), cap / 2), n128, hd);
    }
    const uint64_t avail = available > d.c128_fixed ? available - d.c128_fixed : 0;
    const uint64_t page = s.page_size;
    d.full = uint64_t(double(avail) / d.bytes_per_full_token) / page * page; // _compute_dsv4_sizes
    d.swa = uint64_t(double(d.full) * r) / page * page;
    d.c4 = d.full / 4;
    d.c128 = d.full / 128;
    d.c4_state = d.swa / page * 8;
    return d;
}

// Speculative decoding (docs/rules/sglang-frontier.md §5.1), as python/sglang/srt/arg_groups/speculative_hook.py
// reads it (index id 54507283653): NEXTN is EAGLE (_resolve_speculative_algorithm_alias); _handle_eagle_family sets
// max_running_requests to 48 when it is not given ("Max running requests is reset to 48 for speculative decoding"),
// refuses STANDALONE with DP attention, and chooses (steps, topk, draft tokens) when --speculative-num-steps is not
// given, asserting that topk and the draft tokens are not given either (_auto_choose_speculative_params: 5 / 4 / 8
// for LlamaForCausalLM and Grok-1, else 3 / 1 / 4); with topk 1 the draft tokens become steps + 1. The drafter's
// attention layers (eagle_draft_num_layers) are the checkpoint's MTP / NextN layers: num_nextn_predict_layers or
// mtp_num_hidden_layers (model_desc::n_layer_mtp_apart, or a GGUF's n_layer_mtp).
void resolve_speculative(const model_desc & m, sglang_settings & s, sglang_plan & p) {
    std::string a = s.speculative_algorithm;
    std::transform(a.begin(), a.end(), a.begin(), [](unsigned char c) { return char(std::toupper(c)); });
    if (a.empty()) {
        if (s.speculative_num_steps || s.speculative_eagle_topk || s.speculative_num_draft_tokens) {
            throw error("sglang: --speculative-num-steps, --speculative-eagle-topk and --speculative-num-draft-tokens "
                        "need --speculative-algorithm (EAGLE, EAGLE3, NEXTN or STANDALONE)");
        }
        return;
    }
    if (a == "NGRAM" || a == "DFLASH" || a == "DSPARK" || a == "FROZEN_KV_MTP") {
        throw error(fmt::format("sglang: --speculative-algorithm {} is not modelled by kvfit (EAGLE, EAGLE3, NEXTN and "
                                "STANDALONE are)", a));
    }
    if (a != "EAGLE" && a != "EAGLE3" && a != "NEXTN" && a != "STANDALONE") {
        throw error(fmt::format("sglang: ValueError: Unknown speculative algorithm name: {} (expected EAGLE, EAGLE3, "
                                "NEXTN or STANDALONE)", s.speculative_algorithm));
    }
    const bool nextn = a == "NEXTN";
    if (nextn) a = "EAGLE";
    if (a == "STANDALONE" && s.enable_dp_attention && s.dp > 1) { // dp 1 turns DP attention off (_handle_data_parallelism)
        throw error("sglang: ValueError: Currently standalone speculative decoding does not support dp attention.");
    }
    uint32_t steps = s.speculative_num_steps, topk = s.speculative_eagle_topk, draft = s.speculative_num_draft_tokens;
    if (steps == 0) {
        if (topk || draft) {
            throw error("sglang: AssertionError: --speculative-eagle-topk and --speculative-num-draft-tokens are chosen by "
                        "SGLang only with --speculative-num-steps: give all three, or none");
        }
        // _auto_choose_speculative_params (speculative/spec_info.py): (5, 4, 8) for LlamaForCausalLM and Grok1(V)ForCausalLM,
        // (3, 1, 4) for STANDALONE and every other class, keyed on hf_config.architectures[0]
        const std::string cls = sglang_model_class(m);
        const bool wide = a != "STANDALONE" && (cls == "LlamaForCausalLM" || cls == "Grok1ForCausalLM" || cls == "Grok1VForCausalLM");
        steps = wide ? 5 : 3, topk = wide ? 4 : 1, draft = wide ? 8 : 4;
        p.notes.push_back(fmt::format("--speculative-num-steps {} --speculative-eagle-topk {} --speculative-num-draft-tokens "
                                      "{}: SGLang's choice for {} (_auto_choose_speculative_params)", steps, topk, draft,
                                      cls.empty() ? "this model" : cls));
    } else if (topk == 0) {
        throw error("sglang: --speculative-num-steps without --speculative-eagle-topk: SGLang compares the unset topk "
                    "and fails; give --speculative-eagle-topk (1 for a chain)");
    }
    if (topk == 1 && draft != steps + 1) {
        if (draft != 0) {
            p.notes.push_back(fmt::format("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
                                          "speculative_eagle_topk == 1 ({} -> {})", draft, steps + 1));
        }
        draft = steps + 1;
    }
    if (draft == 0) {
        throw error("sglang: --speculative-eagle-topk above 1 needs --speculative-num-draft-tokens (the tree's tokens)");
    }
    if (s.max_running_requests == 0) {
        s.max_running_requests = 48;
        p.notes.push_back("Max running requests is reset to 48 for speculative decoding. You can override this by "
                          "explicitly setting --max-running-requests. (speculative_hook.py _handle_eagle_family)");
    }
    uint32_t mtp = m.n_layer_mtp_apart ? m.n_layer_mtp_apart : m.n_layer_mtp;
    if (mtp == 0 && a == "EAGLE" && sglang_model_class(m) == "Qwen3NextForCausalLM") {
        // ModelConfig (configs/model_config.py, index id 166457755): the draft of a Qwen3NextForCausalLM becomes
        // Qwen3NextForCausalLMMTP with num_nextn_predict_layers = 1, which the published configs do not state
        mtp = 1;
        p.notes.push_back("Qwen3-Next drafts with one MTP layer: SGLang sets num_nextn_predict_layers = 1 for "
                          "Qwen3NextForCausalLMMTP (configs/model_config.py)");
    }
    if (nextn && mtp == 0) {
        throw error("sglang: --speculative-algorithm NEXTN drafts from the checkpoint's MTP / NextN layers, and this "
                    "config has none (num_nextn_predict_layers, mtp_num_hidden_layers)");
    }
    if (a == "EAGLE" && mtp > 0) {
        p.spec_draft_layers = mtp;
        p.notes.push_back(fmt::format("drafter: the checkpoint's {} MTP / NextN layer{} (eagle_draft_num_layers; "
                                      "--speculative-draft-model-path not given, the target's own checkpoint){}", mtp,
                                      mtp == 1 ? "" : "s", nextn ? "; NEXTN runs as EAGLE" : ""));
    } else {
        p.warnings.push_back(fmt::format("--speculative-algorithm {}: the draft model (--speculative-draft-model-path) is "
                                         "not read, so its KV cache and weights are not counted: the pool is smaller "
                                         "than planned", a));
    }
    p.spec_algorithm = a, p.spec_num_steps = steps, p.spec_eagle_topk = topk, p.spec_num_draft_tokens = draft;
}

// The mamba slots a running request is reserved: _calculate_mamba_ratio (mem_cache/kv_cache_configurator.py, index id
// 54494663073): 1 with --disable-radix-cache, else MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO 3, plus 2 for
// extra_buffer under the overlap schedule (1 without it, 1 for extra_buffer_lazy). The strategy "auto": no_buffer
// without speculative decoding (server_args.py _handle_mamba_radix_cache, index id 271536807); with it the radix cache
// needs extra_buffer: SGLang 0.5.10 refuses no_buffer with speculative decoding ("... is not compatible with radix
// cache when using --mamba-scheduler-strategy no_buffer"), 2026 main resolves auto to extra_buffer under the overlap
// schedule (_mamba_radix_cache_resolution, index id 54489848380), which speculative decoding keeps (spec v2).
// extra_buffer is refused for Nemotron-H ("mamba extra_buffer is not supported for NemotronHForCausalLM model",
// public Nemotron-3-Super deployment notes, index id 62693980055): kvfit allows it for gated-DeltaNet models
// (Qwen3-Next, Qwen3.5) under auto and refuses it for Mamba-2 layers.
uint32_t resolve_mamba_ratio(const model_desc & m, const sglang_settings & s, sglang_plan & p) {
    if (s.disable_radix_cache) {
        p.mamba_strategy = "radix cache off";
        return 1;
    }
    const bool spec = !p.spec_algorithm.empty();
    std::string st = s.mamba_radix_cache_strategy;
    if (st == "auto" && spec) {
        if (m.rec_kind != recurrent_kind::gated_deltanet) {
            throw error(fmt::format("sglang: ValueError: speculative decoding with the radix cache needs "
                                    "--mamba-radix-cache-strategy extra_buffer, which SGLang does not support for {} "
                                    "layers: give --disable-radix-cache", recurrent_kind_name(m.rec_kind)));
        }
        st = "extra_buffer";
        p.notes.push_back("--mamba-radix-cache-strategy extra_buffer: what auto resolves to with speculative decoding "
                          "and the radix cache on (overlap schedule assumed on: 5 mamba slots per running request; 4 "
                          "with --disable-overlap-schedule, which kvfit does not model)");
    } else if (st == "auto") {
        st = "no_buffer";
    }
    if (st != "no_buffer" && m.rec_kind == recurrent_kind::mamba2) {
        throw error(fmt::format("sglang: AssertionError: mamba {} is not supported for Mamba-2 hybrids (NemotronH): give "
                                "--disable-radix-cache or --mamba-radix-cache-strategy no_buffer", st));
    }
    if (st == "no_buffer" && spec) {
        throw error("sglang: ValueError: Speculative decoding is not compatible with radix cache when using "
                    "--mamba-radix-cache-strategy no_buffer: use extra_buffer, or --disable-radix-cache");
    }
    p.mamba_strategy = st;
    return st == "extra_buffer" ? 5 : st == "extra_buffer_lazy" ? 4 : 3;
}

// chunked_prefill_size and cuda_graph_max_bs as server_args._handle_gpu_memory_settings sets them from the GPU's
// memory in MiB (get_device_memory_capacity): T4-class below 20 GiB, A10/4090 below 35, A100-40G/L40 below 60, H100 /
// H200 below 160 (8192, 256 or 512 from TP 4), B200 / MI300 above (16384, 512)
struct sglang_gpu_defaults {
    uint32_t chunk = 0, graph_bs = 0;
};

sglang_gpu_defaults gpu_defaults(double mem_mib, uint32_t tp) {
    if (mem_mib < 20 * 1024) return {2048, 8};
    if (mem_mib < 35 * 1024) return {2048, tp < 4 ? 24u : 80u};
    if (mem_mib < 60 * 1024) return {4096, tp < 4 ? 32u : 160u};
    if (mem_mib < 160 * 1024) return {8192, tp < 4 ? 256u : 512u};
    return {16384, 512};
}

bool one_of(const std::string & cls, std::initializer_list<const char *> names) {
    return std::any_of(names.begin(), names.end(), [&](const char * n) { return cls == n; });
}

// configs/model_config.py multimodal_model_archs (sgl-project/sglang commit 001adf56, index id 57043996518): the
// classes ModelConfig.is_multimodal is true for (with enable_multimodal, below), MiMoV2ForCausalLM only when its
// config has a vision_config
bool multimodal_class(const std::string & cls) {
    return one_of(cls, {"CLIPModel", "Cohere2VisionForConditionalGeneration", "DeepseekVL2ForCausalLM",
                        "Ernie4_5_VLMoeForConditionalGeneration", "Gemma3ForConditionalGeneration",
                        "Gemma3nForConditionalGeneration", "Gemma4ForConditionalGeneration",
                        "Gemma4UnifiedForConditionalGeneration", "Glm4vForConditionalGeneration",
                        "Glm4vMoeForConditionalGeneration", "GlmOcrForConditionalGeneration",
                        "GlmAsrForConditionalGeneration", "Grok1VForCausalLM", "Grok1AForCausalLM", "LlavaLlamaForCausalLM",
                        "Llama4ForConditionalGeneration", "LlavaMistralForCausalLM", "LlavaQwenForCausalLM",
                        "LlavaForConditionalGeneration", "LlavaVidForCausalLM", "Lfm2VlForConditionalGeneration",
                        "LightOnOCRForConditionalGeneration", "MiMoV2ForCausalLM", "MiMoV2ASRForCausalLM", "MiniCPMO",
                        "MiniCPMV",
                        "Mistral3ForConditionalGeneration", "MultiModalityCausalLM", "MllamaForConditionalGeneration",
                        "MossVLForConditionalGeneration", "NemotronH_Nano_VL_V2", "NemotronH_Nano_Omni_Reasoning_V3",
                        "PixtralForConditionalGeneration", "Qwen2AudioForConditionalGeneration",
                        "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration",
                        "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
                        "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                        "InternS2PreviewForConditionalGeneration", "Qwen3ASRForConditionalGeneration",
                        "Qwen3OmniMoeForConditionalGeneration", "KimiVLForConditionalGeneration", "InternVLChatModel",
                        "InternS1ForConditionalGeneration", "InternS1ProForConditionalGeneration", "Phi4MMForCausalLM",
                        "VoxtralForConditionalGeneration", "WhisperForConditionalGeneration",
                        "Step3VLForConditionalGeneration", "POINTSV15ChatModel", "DotsVLMForCausalLM", "DotsOCRForCausalLM",
                        "Sarashina2VisionForCausalLM", "NVILAForConditionalGeneration",
                        "NVILALiteForConditionalGeneration", "DeepseekOCRForCausalLM", "JetVLMForConditionalGeneration",
                        "PaddleOCRVLForConditionalGeneration", "MiDashengLMModel", "StepVLForConditionalGeneration",
                        "Step3p7ForConditionalGeneration", "KimiK25ForConditionalGeneration"});
}

} // namespace

uint32_t sglang_default_chunked_prefill_size(uint64_t gpu_bytes) { return gpu_defaults(double(gpu_bytes >> 20), 1).chunk; }

uint32_t sglang_piecewise_capture_sizes(uint32_t max_tokens) {
    // server_args.py _generate_piecewise_cuda_graph_tokens (index id 271536807; the same ladder as
    // _generate_prefill_cuda_graph_batch_sizes of late 2026, index id 61620183500): each range up to max_tokens
    struct step {
        uint32_t from, to, by;
    };
    static constexpr step ladder[] = {{4, 32, 4},      {48, 256, 16},     {288, 512, 32},
                                      {576, 1024, 64}, {1280, 4096, 256}, {4608, UINT32_MAX, 512}};
    uint32_t n = 0;
    for (const step & r : ladder) {
        const uint32_t hi = std::min(r.to, max_tokens);
        if (hi >= r.from) n += (hi - r.from) / r.by + 1;
    }
    return n;
}

sglang_piecewise sglang_piecewise_cuda_graph(const model_desc & m, const sglang_settings & s, const device_spec & gpu,
                                             const std::string & spec_algorithm) {
    // SGLang main of 2026 (docs/rules/sglang-frontier.md §2): piecewise graphs are on by default
    // (disable_piecewise_cuda_graph = False since PR #16331, "Piecewise Cuda Graph set default"; SGLang's reference log
    // of 2026-04-27 captures 74 of them for Qwen3-8B), and server_args.__post_init__ runs _handle_piecewise_cuda_graph
    // (line 778 of a 2026 build) before _handle_gpu_memory_settings, whose reserve counts them only when they stay on.
    sglang_piecewise pw;
    const uint64_t capacity = gpu.reported_bytes ? gpu.reported_bytes : gpu.memory_bytes;
    const bool mla = m.count(layer_kind::mla) > 0;
    // piecewise_cuda_graph_max_tokens: chunked_prefill_size, or 2048 when use_mla_backend() ("the introduction of
    // piecewise cuda graph will influence the kernel dispatch", PR #15927)
    pw.max_tokens = s.piecewise_cuda_graph_max_tokens ? s.piecewise_cuda_graph_max_tokens
                  : mla ? 2048u : sglang_default_chunked_prefill_size(capacity);
    pw.graphs = sglang_piecewise_capture_sizes(pw.max_tokens);
    const std::string cls = sglang_model_class(m);
    const bool gguf = m.hf_architecture.empty() && !m.gguf_architecture.empty() && m.architecture == m.gguf_architecture;
    // the fraction another reading gives (graphs 0: piecewise off), for the notes: never a silent choice
    const auto fraction = [&](uint32_t graphs) {
        return fmt::format("{:.3f}", sglang_default_fraction(capacity, s.tp, s.dp, s.enable_dp_attention, spec_algorithm,
                                                             graphs));
    };
    // _handle_piecewise_cuda_graph (server_args.py, 2026 main; index id 61947715295 quotes lines 1342-1412): the
    // enforce flag returns before the rules; each rule only sets disable_piecewise_cuda_graph = True
    const bool dsa = one_of(cls, {"DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"}) || is_dsa(m);
    const bool mm_off_by_default = one_of(cls, {"Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration",
                                                "Step3VLForConditionalGeneration"});
    const bool mm_listed = multimodal_class(cls) && (cls != "MiMoV2ForCausalLM" || m.vision.present());
    const bool mm = !mm_off_by_default && (mm_listed || (m.vision.present() && !gguf));
    if (s.enforce_piecewise_cuda_graph) {
        pw.on = true;
        pw.why = "--enforce-piecewise-cuda-graph (_handle_piecewise_cuda_graph returns before its auto-disable rules)";
    } else if (s.disable_piecewise_cuda_graph) {
        pw.why = "--disable-piecewise-cuda-graph";
    } else if (one_of(cls, {"Qwen3NextForCausalLM", "BailingMoeV2_5ForCausalLM", "LLaDAModelLM", "DeepseekV4ForCausalLM",
                            "DeepseekV4ForCausalLMNextN"})) {
        pw.why = fmt::format("{} is on piecewise_cuda_graph_disabled_model_archs (configs/model_config.py)", cls);
    } else if (dsa) {
        // the list of April 2026 (with is_deepseek_dsa; configs/model_config.py as quoted in index id 63303718273:
        // DeepseekV32ForCausalLM, Qwen3NextForCausalLM, GlmMoeDsaForCausalLM, BailingMoeV2_5ForCausalLM, LLaDAModelLM);
        // SGLang PR #23351 made the DSA prefill capturable and took the DSA classes off it (commit 001adf56's list)
        pw.why = "a DSA model (DeepSeek-V3.2, GLM-5): on piecewise_cuda_graph_disabled_model_archs / "
                 "is_deepseek_dsa in SGLang main of April 2026 (configs/model_config.py)";
        pw.notes.push_back(fmt::format("piecewise CUDA graphs of a DSA model: off in SGLang main of April 2026, which kvfit "
                                       "plans; later main (PR #23351) captures them ({} sizes up to {} tokens): default "
                                       "fraction {} there, not {}", pw.graphs, pw.max_tokens, fraction(pw.graphs), fraction(0)));
    } else if (s.enable_dp_attention) {
        // the flag as given: _handle_data_parallelism, which drops DP attention at --dp 1, runs later
        pw.why = "--enable-dp-attention (_handle_piecewise_cuda_graph: DP attention)";
    } else if (gpu.vendor == "AMD" || gpu.vendor == "Apple") {
        const bool vowel = !gpu.vendor.empty() && std::string_view("AEIOUaeiou").find(gpu.vendor[0]) != std::string_view::npos;
        pw.why = fmt::format("{} {} GPU (_handle_piecewise_cuda_graph: non-CUDA hardware, is_hip / is_mps)", vowel ? "an" : "a",
                             gpu.vendor);
    } else if (mm) {
        pw.why = mm_listed ? fmt::format("{} is multimodal (multimodal_model_archs; _handle_piecewise_cuda_graph: "
                                         "multimodal models)", cls)
                           : "a vision tower in the config (multimodal: ModelConfig's has_multimodal_subconfig; "
                             "_handle_piecewise_cuda_graph: multimodal models)";
        pw.notes.push_back(fmt::format("piecewise CUDA graphs off for a multimodal model (SGLang main of April 2026); later "
                                       "main captures them for the multimodal classes it marks supported "
                                       "(is_multimodal_piecewise_cuda_graph_supported, not read): default fraction {} "
                                       "there, not {}", fraction(pw.graphs), fraction(0)));
    } else if (gguf) {
        pw.why = "a GGUF checkpoint (_handle_piecewise_cuda_graph: check_gguf_file)";
    } else {
        pw.on = true;
        // the rules kvfit has no flag for (torch compile, PP, MoE A2A, LoRA, PD disaggregation, CPU offload, HiCache,
        // ...) are off at SGLang's defaults, so they keep the graphs on
        pw.why = "on by default in SGLang main of 2026: no rule of _handle_piecewise_cuda_graph applies";
    }
    if (mm_off_by_default && !s.enforce_piecewise_cuda_graph && !s.disable_piecewise_cuda_graph) {
        pw.notes.push_back(fmt::format("{}: SGLang serves it text-only unless --enable-multimodal (configs/model_config.py "
                                       "mm_disabled_models), so the multimodal rule does not turn piecewise CUDA graphs "
                                       "off", cls));
    }
    if (cls.empty() && !gguf) {
        pw.notes.push_back(fmt::format("the config names no model class (architectures): the piecewise CUDA-graph lists of "
                                       "configs/model_config.py were not checked; piecewise graphs {} (default fraction "
                                       "{} with them, {} without)", pw.on ? "on" : "off", fraction(pw.graphs), fraction(0)));
    }
    if (gpu.vendor.empty() && pw.on && !s.enforce_piecewise_cuda_graph) {
        pw.notes.push_back(fmt::format("the GPU's vendor is not known: CUDA assumed, piecewise CUDA graphs on (default "
                                       "fraction {}); on ROCm they are off ({})", fraction(pw.graphs), fraction(0)));
    }
    if (pw.on && !spec_algorithm.empty()) { // PR #22128, merged 2026-04-17 (index id 52358744796)
        pw.notes.push_back(fmt::format("speculative decoding keeps piecewise CUDA graphs on since SGLang PR #22128 "
                                       "(2026-04-17); earlier builds turned them off: default fraction {} there, not {}",
                                       fraction(0), fraction(pw.graphs)));
    }
    if (pw.on && mla && !s.piecewise_cuda_graph_max_tokens) {
        // server_args.py reserve_for_graph_mb (commit 001067ff, index id 61620183500): "MLA backend overhead is much
        // higher than expected with fa3": 1.5 GiB in place of 8 MiB per graph
        pw.notes.push_back(fmt::format("an MLA model: SGLang main of April 2026 reserves {} x 8 MiB for its piecewise "
                                       "graphs; later main (reserve_for_graph_mb) a flat 1,536 MiB: default fraction {} "
                                       "there, not {}", pw.graphs, fraction(1536 / 8), fraction(pw.graphs)));
    }
    return pw;
}

double sglang_default_fraction(uint64_t gpu_bytes, uint32_t tp, uint32_t dp, bool dp_attention,
                               const std::string & spec_algorithm, uint32_t piecewise_graphs) {
    const double mem = double(gpu_bytes >> 20); // MiB, as get_device_memory_capacity returns it
    const auto [chunk, graph_bs] = gpu_defaults(mem, tp);
    double reserved = 512 + std::max<uint32_t>(chunk, 2048) * 1.5 + graph_bs * 2.0 + double(tp) / 8 * 1024;
    if (dp_attention) reserved += graph_bs * dp * 3.0 + (graph_bs > 300 ? graph_bs * dp * 1.5 : 0.0);
    // "For piecewise cuda graphs ... Only calculate the memory overhead for Non-Torch Memory use since the Torch Memory
    // can be reused with Cuda Graph Capture": 8 MiB per captured size, before the floor (_handle_gpu_memory_settings,
    // index id 271536807; reserve_for_graph_mb of late 2026, index id 61620183500)
    reserved += double(piecewise_graphs) * 8;
    if (mem > 60 * 1024) reserved = std::max(reserved, 10240.0);
    // after the floor: "standalone draft model and cuda graphs" 6 GiB, "eagle draft models and cuda graphs" 2 GiB
    // (server_args._handle_gpu_memory_settings, index id 271536807)
    if (spec_algorithm == "STANDALONE") reserved += 6144;
    else if (!spec_algorithm.empty()) reserved += 2048;
    return std::round((mem - reserved) / mem * 1000) / 1000;
}

uint64_t sglang_derived_context_length(const model_desc & m) {
    // hf_transformers_utils.py get_context_length: max_position_embeddings x rope_scaling's factor, unless the
    // rope_scaling object names original_max_position_embeddings or its rope_type is llama3 (a nested transformers-v5
    // rope_parameters has no top-level factor: 1)
    if (m.rope_scaling.size() != 1) return m.n_ctx_train;
    const auto & e = m.rope_scaling[0];
    if (e.original_in_entry || e.type == "llama3" || e.factor == 0) return m.n_ctx_train;
    if (e.factor < 0) {
        throw error("rope_scaling factor is not a number: SGLang multiplies the context length by it (get_context_length) "
                    "and fails");
    }
    return uint64_t(e.factor * double(m.n_ctx_train));
}

sglang_plan plan_sglang(const model_desc & m, const sglang_settings & s_in, const device_spec & gpu) {
    sglang_plan p;
    sglang_settings s = s_in;
    p.max_running_requests_asked = s_in.max_running_requests;
    if (s.tp == 0 || s.dp == 0) throw error("sglang: --tp and --dp must be at least 1");
    if (s.enable_dp_attention && s.tp % s.dp != 0) {
        throw error(fmt::format("sglang: --enable-dp-attention needs --tp ({}) divisible by --dp ({})", s.tp, s.dp));
    }
    const uint32_t attn_tp = s.enable_dp_attention ? s.tp / s.dp : s.tp;
    resolve_speculative(m, s, p);
    p.fraction_given = s.mem_fraction_static != 0;
    // piecewise (prefill) CUDA graphs: decided before the default fraction, whose reserve holds 8 MiB per captured size
    const sglang_piecewise pw = sglang_piecewise_cuda_graph(m, s, gpu, p.spec_algorithm);
    p.piecewise_on = pw.on, p.piecewise_max_tokens = pw.max_tokens, p.piecewise_graphs = pw.graphs;
    p.piecewise_why = pw.why;
    if (s.mem_fraction_static == 0) {
        // get_device_memory_capacity reads nvidia-smi's memory.total (utils get_nvgpu_memory_capacity; on AMD torch's
        // total_memory): the table's reported figure when the GPU is a table row, else the memory given
        const uint64_t capacity = gpu.reported_bytes ? gpu.reported_bytes : gpu.memory_bytes;
        const uint32_t graphs = pw.on ? pw.graphs : 0;
        p.piecewise_reserve_bytes = uint64_t(graphs) * 8 * (1ull << 20);
        s.mem_fraction_static = sglang_default_fraction(capacity, s.tp, s.dp, s.enable_dp_attention, p.spec_algorithm,
                                                        graphs);
        p.notes.push_back(fmt::format("--mem-fraction-static {:.3f}: SGLang's default for {} MiB at --tp {}{}{} "
                                      "(server_args._handle_gpu_memory_settings; {})",
                                      s.mem_fraction_static, capacity >> 20, s.tp,
                                      s.enable_dp_attention ? fmt::format(" --dp {} with DP attention", s.dp) : "",
                                      p.spec_algorithm.empty() ? "" : p.spec_algorithm == "STANDALONE"
                                          ? ", 6144 MiB more for the STANDALONE draft" : ", 2048 MiB more for the draft",
                                      pw.on ? fmt::format("piecewise CUDA graphs: {} sizes up to {} tokens x 8 MiB = {} MiB "
                                                          "reserved, {}", pw.graphs, pw.max_tokens, graphs * 8, pw.why)
                                            : fmt::format("piecewise CUDA graphs off, none reserved: {}", pw.why)));
        p.notes.insert(p.notes.end(), pw.notes.begin(), pw.notes.end());
    }
    if (!(s.mem_fraction_static > 0 && s.mem_fraction_static < 1)) {
        throw error(fmt::format("--mem-fraction-static '{}': expected a number greater than 0 and below 1 (SGLang keeps "
                                "1 - fraction of the GPU for activations and CUDA graphs)", s.mem_fraction_static));
    }
    if (m.rec_kind == recurrent_kind::lightning && m.count(layer_kind::recurrent) > 0) {
        // vLLM sizes these states (MiniMaxText01ForCausalLM, linear_attention_state_shape); no SGLang rule for the
        // MiniMax-01 / M1 lightning layers was read, so none is guessed
        throw error("sglang: MiniMax lightning-attention layers (MiniMax-Text-01, MiniMax-M1: attn_type_list 0) are not "
                    "modelled for SGLang; plan them with --runtime vllm or llama.cpp");
    }
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (m.n_head[il] != 0 && m.n_head[il] % attn_tp != 0) {
            throw error(fmt::format("sglang: --tp {} does not divide the {} attention heads", attn_tp, m.n_head[il]));
        }
    }
    detail::check_tp_divides_heads(m, attn_tp, "sglang", s.enable_dp_attention ? "attention TP (--tp / --dp)" : "--tp");
    const uint32_t model_s = detail::torch_dtype_bytes(m.dtype, 2, "dtype");
    const bool dsa = is_dsa(m);
    std::string dt = s.kv_cache_dtype;
    if (dsa) { // server_args._set_default_nsa_kv_cache_dtype (sglang-frontier.md §1.1)
        if (dt == "auto") {
            const int major = int(gpu.compute_capability);
            dt = major >= 10 ? "fp8_e4m3" : "bfloat16";
            p.notes.push_back(fmt::format("Setting KV cache dtype to {} for DeepSeek DSA on SM{} device.{}", dt,
                                          major >= 10 ? 10 : 9, major == 0 ? " (compute capability unknown: Hopper assumed)" : ""));
        }
        if (dt != "fp8_e4m3" && dt != "bfloat16" && dt != "bf16") {
            throw error("AssertionError: DeepSeek DSA only supports bf16/bfloat16 or fp8_e4m3 kv_cache_dtype");
        }
    }
    uint32_t es = model_s;
    if (dt == "fp8_e4m3" || dt == "fp8_e5m2") es = 1;
    else if (dt == "bf16" || dt == "bfloat16") es = 2;
    else if (dt != "auto") {
        throw error(fmt::format("--kv-cache-dtype '{}': expected auto, bf16, bfloat16, fp8_e4m3 or fp8_e5m2", dt));
    }
    p.kv_dtype = dt == "auto" ? (m.dtype.empty() ? "bfloat16" : m.dtype) : dt == "bf16" ? "bfloat16" : dt;
    bool dsv4 = false;
    for (const auto & layer : m.caches) {
        for (const auto & c : layer) dsv4 |= c.kind == cache_kind::compressed;
    }
    if (s.page_size == 0 && dsv4) {
        s.page_size = 256;
        p.notes.push_back("--page-size 256 assumed for DeepSeek-V4 (the compressed-attention pools need a multiple of 128; "
                          "DSV4PoolConfigurator addresses its state pools by this page)");
    }
    if (s.page_size == 0) {
        s.page_size = dsa ? 64 : 1;
        if (dsa) p.notes.push_back("--page-size 64: the DSA attention backends page by 64 tokens");
    }
    const uint64_t derived = sglang_derived_context_length(m); // SGLang's default and its ceiling, derived once
    if (s.context_length && derived && s.context_length > derived) {
        // configs/model_config.py _derive_context_length: a longer --context-length raises unless the environment
        // sets SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 (kvfit plans SGLang as launched, without it)
        throw error(fmt::format("sglang: ValueError: Warning: User-specified context_length ({}) is greater than the derived "
                                "context_length ({}). This may lead to incorrect model outputs or CUDA errors. To allow "
                                "overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
                                s.context_length, derived));
    }
    if (!s.context_length) { // SGLang's default; a rope-scaled one is said
        s.context_length = derived;
        if (s.context_length != m.n_ctx_train) {
            p.notes.push_back(fmt::format("context length {} = max_position_embeddings {} x the config's rope_scaling factor "
                                          "(hf_transformers_utils.py get_context_length)", s.context_length, m.n_ctx_train));
        }
    }
    p.context_length = s.context_length;

    // rest = free_after_weights - pre_model_load_free x (1 - fraction) = pre_free x fraction - weights
    const uint64_t overhead = s.pre_load_overhead_bytes.value_or(512ull << 20);
    if (!s.pre_load_overhead_bytes) {
        p.notes.push_back("0.50 GiB in use before the weights load (CUDA context): kvfit default (--cuda-context-memory)");
        p.assumptions.push_back("0.50 GiB in use before the weights load (CUDA context, NCCL) is a kvfit constant: "
                                "give --cuda-context-memory (the log's \"Load weight begin. avail mem\" against the GPU's total)");
    }
    if (s.pre_load_overhead_bytes && overhead >= gpu.memory_bytes) { // an input error, not a verdict on the weights
        throw error(fmt::format("--cuda-context-memory {}: not less than {}'s {} (the memory in use before the weights "
                                "load is part of the GPU)", detail::gib_text(overhead), gpu.name, detail::gib_text(gpu.memory_bytes)));
    }
    const uint64_t pre_free = gpu.memory_bytes > overhead ? gpu.memory_bytes - overhead : 0;
    p.weights_bytes = s.weights_bytes ? *s.weights_bytes : rank_weights(m, s.tp);
    if (p.spec_draft_layers) {
        // the MTP drafter is loaded before the pool is profiled ("Loaded weights (target + draft) can exceed the static
        // budget", kv_cache_configurator.py _profile_available_bytes); its embedding and LM head are the target's
        // (EAGLE workers share them): the MTP blocks over --tp, an estimate (hf_params.cpp weights.mtp)
        p.spec_draft_weights_bytes = detail::weight_bytes(m.weights.mtp, model_s) / s.tp;
        if (p.spec_draft_weights_bytes == 0 && !m.weights.layers.empty()) { // no MTP block in the config (Qwen3-Next)
            const uint64_t block = detail::weight_bytes(m.weights.layers.back(), model_s);
            p.spec_draft_weights_bytes = p.spec_draft_layers * (block + 2ull * m.n_embd * m.n_embd * model_s) / s.tp;
        }
        p.weights_bytes += p.spec_draft_weights_bytes;
        p.assumptions.push_back(fmt::format("the MTP drafter's weights, {:.2f} GiB per rank, are kvfit's estimate (one block "
                                            "like the last decoder block, eh_proj and norms; embedding and LM head shared)",
                                            double(p.spec_draft_weights_bytes) / double(1ull << 30)));
    }
    p.rest_bytes = int64_t(double(pre_free) * s.mem_fraction_static) - int64_t(p.weights_bytes);
    const bool compressed = dsv4;
    if (compressed) { // DeepSeek-V4: DSV4PoolConfigurator.calculate_pool_sizes (see dsv4_pool_sizes)
        if (s.page_size % 128 != 0) {
            throw error(fmt::format("sglang: AssertionError: page_size must be multiple of 128 for compressed attention "
                                    "(--page-size {})", s.page_size));
        }
        const uint64_t avail = p.rest_bytes > 0 ? uint64_t(p.rest_bytes) : 0;
        const dsv4_pool d = dsv4_pool_sizes(m, s, avail, s.enable_dp_attention ? s.dp : 1);
        p.cell_bytes = uint64_t(std::ceil(d.bytes_per_full_token));
        p.alloc_bytes_per_token = p.cell_bytes;
        p.max_total_num_tokens = d.full;
        p.kv_pool_bytes = d.c128_fixed + uint64_t(double(d.full) * d.bytes_per_full_token);
        p.notes.push_back(fmt::format("DSV4 memory calculation: bytes_per_full_token={:.2f}, available_bytes={:.2f} GB, "
                                      "c128_state_fixed={:.2f} GB, full_token={}", d.bytes_per_full_token,
                                      double(avail) / double(1ull << 30), double(d.c128_fixed) / double(1ull << 30), d.full));
        p.notes.push_back(fmt::format("DSV4 pool sizes: full={}, swa={}, c4={}, c128={}, c4_state={}, c128_state=0", d.full,
                                      d.swa, d.c4, d.c128, d.c4_state));
        p.notes.push_back("DeepSeek-V4 KV bytes are DSV4PoolConfigurator's budget (fp8 nope, bf16 rope, fp32 compressor "
                          "states, no speculative decoding, no HiSparse); DeepSeekV4TokenToKVPool's own padding was not read");
    }
    sglang_cell cell = compressed ? sglang_cell{p.cell_bytes, p.alloc_bytes_per_token}
                                  : cell_bytes(m, s, es, attn_tp, model_s);
    uint64_t draft_per_token = 0;
    if (p.spec_draft_layers && compressed) {
        throw error("sglang: speculative decoding on DeepSeek-V4's compressed pools (DSV4PoolConfigurator: (L+1)/L and "
                    "doubled state rings) is not modelled by kvfit");
    }
    if (p.spec_draft_layers) {
        // The drafter's KV pool holds as many tokens as the target's (MemoryPoolConfig, "shared between target and
        // draft workers"), so the target's cell pays for it: DefaultPoolConfigurator scales cell_size by
        // int(cell x (1 + eagle_draft_num_layers / num_layers)), num_layers the layers with KV (a hybrid's full-attention
        // layers); HybridSWAPoolConfigurator adds full_per_token x N_draft to the full part (pool_configurator.py,
        // commit 003fca80, index id 59995277517). The MTP layers are full-attention layers of the target's shape.
        uint32_t n_kv = 0;
        for (uint32_t il = 0; il < m.n_layer; ++il) n_kv += m.attention_cache(il) != nullptr;
        if (n_kv == 0) throw error("sglang: speculative decoding on a model without attention layers is not modelled");
        const uint64_t before = cell.budget;
        if (cell.swa > 0 && cell.full > 0) {
            uint32_t n_full = 0;
            for (uint32_t il = 0; il < m.n_layer; ++il) n_full += m.attention_cache(il) != nullptr && !m.is_swa(il);
            draft_per_token = n_full ? cell.full / n_full * p.spec_draft_layers : 0;
            cell.full += draft_per_token;
            cell.budget += draft_per_token;
            cell.alloc += draft_per_token;
        } else {
            cell.budget = uint64_t(double(cell.budget) * (1 + double(p.spec_draft_layers) / double(n_kv)));
            cell.alloc = uint64_t(double(cell.alloc) * (1 + double(p.spec_draft_layers) / double(n_kv)));
            draft_per_token = cell.budget - before;
        }
        p.notes.push_back(fmt::format("cell_size {} -> {} B per token: the drafter's {} layer{} of KV (cell x (1 + {} / {}))",
                                      before, cell.budget, p.spec_draft_layers, p.spec_draft_layers == 1 ? "" : "s",
                                      p.spec_draft_layers, n_kv));
    }
    p.cell_bytes = cell.budget;
    p.alloc_bytes_per_token = cell.alloc;

    const uint32_t n_rec = m.count(layer_kind::recurrent);
    int64_t kv = p.rest_bytes;
    if (n_rec > 0) p.mamba_ratio = resolve_mamba_ratio(m, s, p);
    if (n_rec > 0 && p.rest_bytes > 0) {
        uint64_t conv = 0, ssm = 0;
        // configs/mamba_utils.py mamba2_state_dtype: the SSM (temporal) state is float32 unless the config's
        // mamba_ssm_dtype (or SGLANG_MAMBA_SSM_DTYPE) says otherwise, not the model's dtype; the conv state is
        // SGLANG_MAMBA_CONV_DTYPE, bfloat16 by default
        const uint32_t ssm_s = m.ssm_dtype.empty() ? 4u : detail::torch_dtype_bytes(m.ssm_dtype, model_s, "mamba_ssm_dtype");
        if (m.ssm_dtype.empty()) {
            p.notes.push_back("mamba SSM state float32: SGLang's default when the config states no mamba_ssm_dtype "
                              "(configs/mamba_utils.py mamba2_state_dtype; SGLANG_MAMBA_SSM_DTYPE overrides it); conv state "
                              "bfloat16 (SGLANG_MAMBA_CONV_DTYPE)");
        }
        detail::recurrent_state_bytes(m, attn_tp, 2u, ssm_s, conv, ssm);
        p.mamba_bytes_per_request = uint64_t(n_rec) * (conv + ssm);
        if (!p.spec_algorithm.empty()) {
            // handle_max_mamba_cache with speculative decoding (kv_cache_configurator.py, index id 54494663073): the
            // intermediate SSM and conv states of every draft token (MambaPool intermediate_ssm_state_cache
            // [layers, max_running_requests + 1, D, ...], intermediate_conv_window_cache, memory_pool.py index id
            // 71289913139) are reserved as mamba_cache_per_req x requests x D, requests = min(max_running_requests /
            // attn DP, slots // ratio); the ratio split solves slots x per_req x (1 + D / ratio) = mamba_budget
            const uint64_t per = p.mamba_bytes_per_request, d = p.spec_num_draft_tokens;
            const uint64_t reqs = s.max_running_requests / (s.enable_dp_attention ? s.dp : 1);
            uint64_t running = 0;
            if (s.max_mamba_cache_size) {
                p.mamba_slots = s.max_mamba_cache_size;
                running = std::min<uint64_t>(reqs, p.mamba_slots / p.mamba_ratio);
            } else if (s.disable_radix_cache) { // max_running_requests is set (48 by default), so the slots follow it
                p.mamba_slots = reqs;
                running = p.mamba_slots;
            } else {
                const double r = s.mamba_full_memory_ratio;
                const double budget = double(p.rest_bytes) * r / (1 + r);
                p.mamba_slots = uint64_t(budget / (double(per) * (1 + double(d) / double(p.mamba_ratio))));
                running = std::min<uint64_t>(reqs, p.mamba_slots / p.mamba_ratio);
            }
            p.mamba_intermediate_bytes = per * running * d;
            kv -= int64_t(p.mamba_slots * per + p.mamba_intermediate_bytes);
        } else if (s.max_mamba_cache_size) {
            p.mamba_slots = s.max_mamba_cache_size;
            kv -= int64_t(p.mamba_slots * p.mamba_bytes_per_request);
        } else if (s.disable_radix_cache && s.max_running_requests) {
            p.mamba_slots = s.max_running_requests;
            kv -= int64_t(p.mamba_slots * p.mamba_bytes_per_request);
        } else { // mamba_budget = rest x r / (1 + r)
            const double r = s.mamba_full_memory_ratio;
            const double budget = double(p.rest_bytes) * r / (1 + r);
            p.mamba_slots = uint64_t(budget / double(p.mamba_bytes_per_request));
            kv -= int64_t(budget);
        }
    }
    const uint64_t budget = kv > 0 ? uint64_t(kv) : 0;
    if (!compressed) p.max_total_num_tokens = p.cell_bytes ? budget / p.cell_bytes / s.page_size * s.page_size : 0;
    p.spec_draft_kv_bytes = p.max_total_num_tokens * draft_per_token;
    // The hybrid SWA pool (HybridSWAPoolConfigurator, mem_cache/pool_configurator.py; sglang-frontier.md §4): the full
    // pool holds max_total_num_tokens, the sliding-window pool int(full x swa_full_tokens_ratio), page-aligned; both
    // allocated ("SWAKVPool mem usage: X GB, swa size: N, full size: M").
    if (!compressed && cell.swa > 0 && cell.full > 0) {
        p.full_bytes_per_token = cell.full, p.swa_bytes_per_token = cell.swa;
        p.swa_tokens = uint64_t(double(p.max_total_num_tokens) * s.swa_full_tokens_ratio) / s.page_size * s.page_size;
        p.notes.push_back(fmt::format("Use sliding window memory pool. full_layer_tokens={}, swa_layer_tokens={} "
                                      "(--swa-full-tokens-ratio {}{})", p.max_total_num_tokens, p.swa_tokens,
                                      s.swa_full_tokens_ratio, s.swa_full_tokens_ratio_given ? "" : ": SGLang's default, "
                                      "server_args.py; SGLang 0.5.6's MiMo-V2-Flash path sized both pools alike, as 1"));
    }
    // the pool as allocated: DSA buffers hold size + page_size rows (NSATokenToKVPool), 11% above the budget in fp8
    if (!compressed) {
        p.kv_pool_bytes = dsa && p.max_total_num_tokens ? (p.max_total_num_tokens + s.page_size) * p.alloc_bytes_per_token
                        : p.swa_tokens ? p.max_total_num_tokens * p.full_bytes_per_token + p.swa_tokens * p.swa_bytes_per_token
                                       : budget;
    }
    if (dsa && p.max_total_num_tokens) {
        p.notes.push_back(fmt::format("KV Cache is allocated. #tokens: {}, KV size: {:.2f} GB", p.max_total_num_tokens,
                                      double(p.kv_pool_bytes) / double(1ull << 30)));
        // SGLang counts the tokens by cell_size and allocates alloc_bytes_per_token (K8: 43,188 vs 48,068 B for
        // DeepSeek-V3.2 in fp8): the pool it allocates is larger than the budget it was sized from
        if (p.kv_pool_bytes > budget) {
            p.warnings.push_back(fmt::format(
                "SGLang sizes this DSA pool by cell_size ({} B per token) but allocates {} B per token (the indexer keys "
                "and scales) and {} more rows: the pool takes {:.2f} GiB more than the {:.2f} GiB it was sized from, "
                "memory the static budget does not hold (as SGLang itself does, case K8)", p.cell_bytes,
                p.alloc_bytes_per_token, s.page_size, double(p.kv_pool_bytes - budget) / double(1ull << 30),
                double(budget) / double(1ull << 30)));
        }
    }

    // max_running_requests: clamp(tokens / context_len x 512, 2048, 4096), at most tokens / 2, and for hybrids at most
    // mamba slots // ratio: _calculate_mamba_ratio (model_executor/model_runner_kv_cache_mixin.py, later
    // kv_cache_configurator.py; index ids 55033979549, 51863200264, 54494663073) returns 1 with --disable-radix-cache,
    // else MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO = 3, plus 2 (1 without the overlap schedule) under
    // --mamba-scheduler-strategy extra_buffer; the default "auto" resolves to no_buffer (server_args.py __post_init__,
    // index id 271536807), so 3. (kvfit divided by 2 before: one request in three too many.)
    const uint64_t mamba_ratio = p.mamba_ratio ? p.mamba_ratio : 1;
    uint64_t mrr = s.max_running_requests;
    if (mrr == 0) {
        const double by_len = double(p.max_total_num_tokens) / double(std::max<uint64_t>(1, s.context_length)) * 512;
        mrr = uint64_t(std::clamp(by_len, 2048.0, 4096.0));
        mrr = std::min(mrr, p.max_total_num_tokens / 2);
    }
    if (n_rec > 0) {
        mrr = std::min<uint64_t>(mrr, p.mamba_slots / mamba_ratio);
        const bool by_default = s.mamba_radix_cache_strategy == "auto" && p.spec_algorithm.empty();
        // SGLang main of 2026 (arg_groups model-override registry, _mamba_radix_cache_resolution, index id
        // 54489848380) resolves "auto" to extra_buffer when the overlap schedule is on (its default) and the
        // architecture supports it with the triton linear-attention backend (Qwen3.5, Qwen3-Next among them): 5 slots
        // per request. The releases kvfit's rule reads (0.5.x server_args.py) resolve it to no_buffer. Said, with the
        // count the newer default gives, so that neither is a silent default.
        const std::string newer = !s.disable_radix_cache && m.rec_kind == recurrent_kind::gated_deltanet
            ? fmt::format("; SGLang main of late 2026 resolves auto to extra_buffer under the overlap schedule "
                          "(_mamba_radix_cache_resolution): {} // 5 = {} requests, planned with "
                          "--mamba-radix-cache-strategy extra_buffer", p.mamba_slots, p.mamba_slots / 5)
            : std::string();
        p.notes.push_back(by_default
            ? fmt::format("max_running_requests at most {} mamba slots // {} ({}; _calculate_mamba_ratio, mamba scheduler "
                          "strategy no_buffer, SGLang 0.5.x's default){}", p.mamba_slots, mamba_ratio,
                          s.disable_radix_cache ? "radix cache off" : "radix cache on: 3 slots per request", newer)
            : fmt::format("max_running_requests at most {} mamba slots // {} ({}; _calculate_mamba_ratio)", p.mamba_slots,
                          mamba_ratio, s.disable_radix_cache ? "radix cache off"
                          : fmt::format("radix cache on, {}: {} slots per request", p.mamba_strategy, mamba_ratio)));
    }
    p.max_running_requests = mrr;
    p.settings = s;

    const double gib = double(1ull << 30);
    if (p.rest_bytes <= 0) {
        const double need = double(p.weights_bytes) / double(std::max<uint64_t>(1, pre_free));
        p.errors.push_back(need < 0.98
            ? fmt::format("Not enough memory: the weights take {:.2f} GiB of the {:.2f} GiB static budget; increase "
                          "--mem-fraction-static to at least {:.3f}", double(p.weights_bytes) / gib,
                          double(pre_free) * s.mem_fraction_static / gib, std::ceil(need * 1000 + 1) / 1000)
            : fmt::format("Not enough memory: the weights take {:.2f} GiB per GPU at --tp {}, more than the {:.2f} GiB a "
                          "GPU offers; a larger --tp (more GPUs) is needed", double(p.weights_bytes) / gib, s.tp,
                          double(pre_free) / gib));
    } else if (const uint64_t states = p.mamba_slots * p.mamba_bytes_per_request + p.mamba_intermediate_bytes;
               n_rec > 0 && states >= uint64_t(p.rest_bytes)) {
        // the mamba pool alone takes what the weights left: the cause named, not the pool assertion it leads to
        p.errors.push_back(fmt::format(
            "the mamba state takes {:.2f} GiB ({} slot{}{} x {:.2f} MiB{}), no less than the {:.2f} GiB left for the pools "
            "after the weights: give a smaller --max-mamba-cache-size{}", double(states) / gib, p.mamba_slots,
            p.mamba_slots == 1 ? "" : "s", s.max_mamba_cache_size ? " (--max-mamba-cache-size)" : "",
            double(p.mamba_bytes_per_request) / double(1ull << 20),
            p.mamba_intermediate_bytes ? fmt::format(", and {:.2f} GiB of draft-token states",
                                                     double(p.mamba_intermediate_bytes) / gib) : std::string(),
            double(p.rest_bytes) / gib, p.mamba_intermediate_bytes ? " or fewer draft tokens" : ""));
    } else if (std::min<uint64_t>(s.context_length, p.max_total_num_tokens) <= 6) {
        // scheduler.py: max_req_len = min(context_len - 1, max_total_num_tokens - 1), max_req_input_len = max_req_len - 5,
        // both asserted > 0
        p.errors.push_back(fmt::format("AssertionError: Memory pool size is too small (the pool holds {} tokens)",
                                       p.max_total_num_tokens));
    } else if (const uint64_t one = p.mamba_bytes_per_request * (mamba_ratio + p.spec_num_draft_tokens);
               n_rec > 0 && p.max_running_requests == 0 && p.spec_num_draft_tokens && one >= uint64_t(p.rest_bytes)) {
        // with draft tokens one request needs its slots and a state per draft token: more slots cannot help
        p.errors.push_back(fmt::format(
            "one running request needs {} mamba slots and {} draft-token states of {:.2f} MiB, {:.2f} GiB, no less than "
            "the {:.2f} GiB left for the pools after the weights: give fewer --speculative-num-draft-tokens",
            mamba_ratio, p.spec_num_draft_tokens, double(p.mamba_bytes_per_request) / double(1ull << 20),
            double(one) / gib, double(p.rest_bytes) / gib));
    } else if (n_rec > 0 && p.max_running_requests == 0 && p.mamba_slots > 0) {
        // slots there are, fewer than one request's share: max_running_requests = slots // ratio (_calculate_mamba_ratio
        // above) is 0 and no request can run; only with the radix cache on (ratio 3), as 1 slot // 1 is a request
        p.errors.push_back(fmt::format(
            "{} mamba cache slots{} // {} per request (the radix cache on; _calculate_mamba_ratio) = 0 running "
            "requests: give --max-mamba-cache-size {} or more, or --disable-radix-cache (1 slot per request)",
            p.mamba_slots, s.max_mamba_cache_size ? " (--max-mamba-cache-size)" : "", mamba_ratio, mamba_ratio));
    } else if (n_rec > 0 && p.max_running_requests == 0) {
        p.errors.push_back("no mamba cache slot fits: lower --mamba-full-memory-ratio or raise --mem-fraction-static");
    } else if (p.max_running_requests == 0) {
        p.errors.push_back(fmt::format("the pool of {} tokens holds no running request", p.max_total_num_tokens));
    }
    if (p.errors.empty() && p.max_running_requests_asked > p.max_running_requests) {
        // the cap above (mamba slots // ratio): SGLang lowers the setting and starts; the concurrency asked is not met
        p.warnings.push_back(fmt::format("starts, but runs at most {} request{} at once, not the {} --max-running-requests "
                                         "asks: {} mamba slots // {} per request", p.max_running_requests,
                                         p.max_running_requests == 1 ? "" : "s", p.max_running_requests_asked,
                                         p.mamba_slots, mamba_ratio));
    }
    if (!p.errors.empty()) {
    } else if (p.max_total_num_tokens < s.context_length) {
        // SGLang starts and caps every request at max_req_len instead (scheduler.py, same line): the server runs, the
        // context asked for does not
        p.warnings.push_back(fmt::format("starts, but caps a request at {} tokens (max_req_len = min(--context-length "
                                         "- 1, pool - 1)): the pool holds {} tokens, fewer than --context-length {}",
                                         p.max_total_num_tokens - 1, p.max_total_num_tokens, s.context_length));
    }
    return p;
}

} // namespace kvfit
