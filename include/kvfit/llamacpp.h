#pragma once
/// @file llamacpp.h
/// The llama.cpp runtime (src/runtimes/llamacpp/): its settings, the allocation rules of llama.cpp's context (KV
/// caches, recurrent state, output and compute buffers), the placement of tensors on devices (-ngl, -ts, -ot, MoE
/// experts on the CPU), its flags, and its entry in the registry (runtime.h). A rule reads only model_desc and the
/// settings, never an architecture name or a file format. Ollama runs llama-server and calls these rules too.
///
/// Sources: llama.cpp 5b4ebc5 (node-llama-cpp 3.21.1, ../shared/reference/llamacpp/RULES.md) and v0.5.0
/// (node-llama-cpp 3.22.1), both measured by the conformance suite (tests/conformance/); docs/llamacpp.md.

#include "kvfit/error.h"
#include "kvfit/ggml_type.h"
#include "kvfit/llamacpp_cpu.h"
#include "kvfit/llamacpp_extras.h"
#include "kvfit/model.h"
#include "kvfit/runtime.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

// ============================================================================================================
// Context rules (src/runtimes/llamacpp/rules.cpp, compute*.cpp)
// ============================================================================================================

/// The llama.cpp release whose allocation rules are reproduced (`--llamacpp-version`). Both are measured by the
/// conformance suite (tests/conformance/) on their own build:
/// - b5b4ebc5: llama.cpp build 5b4ebc5 (release tag v0.4.0), as bundled by node-llama-cpp 3.21.1; the release of
///   ../shared/reference/llamacpp/results.csv.
/// - v0_5_0:   llama.cpp release v0.5.0, as bundled by node-llama-cpp 3.22.1 (the default).
/// Where the two allocate differently, the rule says so beside its release (docs/llamacpp.md lists them).
enum class llamacpp_release : uint8_t { b5b4ebc5, v0_5_0 };

/// The release planned when none is named: the newest, v0.5.0.
inline constexpr llamacpp_release llamacpp_release_default = llamacpp_release::v0_5_0;

/// The release as people name it in every output: "llama.cpp v0.5.0 (node-llama-cpp 3.22.1)",
/// "llama.cpp 5b4ebc5 (node-llama-cpp 3.21.1)".
const char * llamacpp_release_name(llamacpp_release r);

/// The `--llamacpp-version` value: "5b4ebc5" (also "v0.4.0", its release tag) or "v0.5.0" (also "0.5.0").
/// Throws kvfit::error "--llamacpp-version 'x': expected 5b4ebc5 or v0.5.0".
llamacpp_release parse_llamacpp_release(std::string_view text);

/// `-fa on|off|auto`. auto resolves to on where the backend supports flash attention (CPU, CUDA, Metal,
/// Vulkan all do for the head sizes kvfit models), as llama_context's auto check does (src/llama-context.cpp).
enum class flash_attn_mode : uint8_t { automatic, on, off };

/// The spelling of a flash attention mode as `-fa` takes it and the JSON writes it: "on", "off" or "auto".
const char * flash_attn_name(flash_attn_mode m);

/// How MLA layers are cached. llama.cpp's current cache keeps only the latent as K
/// (kv_lora_rank + n_rot values, V = 0 bytes); before that change it kept K (576) and V (512) per layer.
enum class mla_layout : uint8_t { k_only, k_and_v };

/// Which context the draft / MTP context of speculative decoding is sized at (docs/rules/llamacpp-spec.md, "How the
/// fit sizes the MTP context (K6), tied to builds"):
/// - target: the target's n_ctx (`cparams.n_ctx = llama_n_ctx(ctx_tgt)`, common/speculative.cpp:2550), per stream the
///   target's n_ctx_seq, measured again at every n_ctx the fit tries (common_fit_extra_model, common/fit.cpp:205-263).
///   llama.cpp 5b4ebc5 and v0.5.0 (both releases kvfit reproduces) do this.
/// - n_ctx_train: llama.cpp build 9893 (d75936111, July 2026, issue #25408): the MTP context measured once at
///   n_ctx = 0 -> n_ctx_train (llama-context.cpp `n_ctx = params.n_ctx == 0 ? n_ctx_train`) and created there.
enum class spec_draft_ctx : uint8_t { target, n_ctx_train };

/// Speculative decoding of llama-server (src/runtimes/llamacpp/spec.cpp; docs/rules/llamacpp-spec.md sections 1-2).
/// Flags as llama.cpp v0.5.0 common/arg.cpp spells them: --spec-type draft-mtp, --spec-draft-n-max, -md, -ngld,
/// -ctkd, -ctvd, -devd.
struct llamacpp_spec {
    bool mtp = false;          ///< --spec-type draft-mtp: an MTP draft context on the model's NextN block(s)
    uint32_t n_max = 3;        ///< --spec-draft-n-max N, draft tokens (common.h:326 default 3)
    std::string draft_path;    ///< -md/--spec-draft-model FILE: a separate draft model ("" none)
    /// The draft model read from draft_path like the main model (a GGUF: its own weights, KV, state, compute);
    /// set by parse_llamacpp_flags, or by the caller (`kvfit exec`) after parse_launch_command.
    std::shared_ptr<const model_desc> draft;
    int32_t draft_n_gpu_layers = -1; ///< -ngld: draft layers on the GPU; negative (auto, all: llama.cpp -1/-2) = all
    ggml_type type_k = ggml_type::f16; ///< -ctkd: K type of the draft / MTP cache (default f16 whatever -ctk is)
    ggml_type type_v = ggml_type::f16; ///< -ctvd: V type of the draft / MTP cache
    /// -devd: GPU indices the draft model runs on (CUDA0 -> 0, ...); empty = the target's GPUs; {-1} alone = none
    /// ("none": the draft stays in host memory).
    std::vector<int32_t> draft_devices;
    spec_draft_ctx draft_ctx = spec_draft_ctx::target; ///< --spec-draft-ctx target|train (train: build 9893's rule)
    /// True when a draft or MTP context is created.
    bool active() const { return mtp || !draft_path.empty() || draft != nullptr; }
};
/// The ggml backend the GPUs run (`--backend`; compute_cuda.cpp): compute buffers differ by backend. cpu is the
/// CPU build (no GPU); the GPU backends are ggml-cuda (NVIDIA), ggml-cuda built with HIP (rocm: AMD), ggml-vulkan
/// and ggml-metal (Apple).
enum class gpu_backend : uint8_t { cpu, cuda, rocm, vulkan, metal };

/// llama.cpp context settings, spelled as llama-server's flags. Defaults are llama-server's
/// (common/common.h: n_batch 2048, n_ubatch 512, n_parallel 1, cache types f16, flash attention auto).
struct llamacpp_settings {
    uint64_t n_ctx = 0;            ///< -c/--ctx-size, tokens; 0 = the model's n_ctx_train (llama-server's default)
    uint32_t n_seq = 1;            ///< -np/--parallel: sequences (server slots)
    uint32_t n_batch = 2048;       ///< -b/--batch-size: logical batch, tokens
    uint32_t n_ubatch = 512;       ///< -ub/--ubatch-size: physical batch, tokens
    ggml_type type_k = ggml_type::f16; ///< -ctk/--cache-type-k
    ggml_type type_v = ggml_type::f16; ///< -ctv/--cache-type-v
    flash_attn_mode flash_attn = flash_attn_mode::automatic; ///< -fa/--flash-attn
    bool kv_unified = false;       ///< --kv-unified: one KV stream shared by all sequences
    bool swa_full = false;         ///< --swa-full: window layers get the full context
    mla_layout mla = mla_layout::k_only; ///< MLA cache layout (k_and_v reproduces the older release)
    llamacpp_release release = llamacpp_release_default; ///< --llamacpp-version: whose rules are applied
    // --- projector, adapters, host RAM (issue 14 items 3, 4, 6: llamacpp_extras.h, mmproj.cpp, lora.cpp, host_ram.cpp)
    std::optional<mmproj_desc> mmproj; ///< --mmproj FILE (-mm): the projector read from its header
    bool mmproj_offload = true;        ///< false with --no-mmproj-offload: projector weights and compute in host RAM
    std::vector<lora_adapter> lora;    ///< --lora FILE / --lora-scaled FILE:S, in the order given
    int64_t cache_ram_mib = llamacpp_default_cache_ram_mib; ///< --cache-ram MiB: prompt cache limit (-1 none, 0 off)
    uint32_t ctx_checkpoints = llamacpp_default_ctx_checkpoints; ///< --ctx-checkpoints N per slot
    uint64_t ram_bytes = 0;            ///< --ram SIZE (or detected): host RAM for the host verdict; 0 = unknown
    bool host_ram_asked = false;       ///< --ram, --cache-ram or --ctx-checkpoints given, even at its default value
    /// Outputs the context reserves logits for (llama_context_params::n_outputs_max) when server_outputs is false:
    /// 0 = n_batch, libllama's default (llama-context.cpp:250) and what the node-llama-cpp addon, llama-fit-params
    /// (tools/fit-params/fit-params.cpp: common_context_params_to_llama of common_params' 0) and llama-completion use,
    /// which the conformance suite measures; N = that many (`--n-outputs-max N`). With speculative decoding kvfit plans
    /// llama-server's n_parallel x (1 + n_max) (server-context.cpp:41-53, common/speculative.cpp:2606-2615) whatever
    /// this says.
    uint32_t n_outputs_max = 0;
    /// llama-server's rule (`--n-outputs-max server`, the default of every plan made from the llama.cpp flags, `kvfit
    /// exec` of llama-server / llama-cli, and Ollama's launch): load_model sets n_outputs_max = server_output_limits(
    /// params).total = min(-b, n_parallel x (1 + n_max)), at least 1, n_max = common_speculative_n_max (0 without
    /// speculative decoding; server-context.cpp:41-53, 1014-1016, common/speculative.cpp:2335-2360, 2606-2615; both
    /// v0.5.0 and 5b4ebc5). The pp graph then reserves logits for min(n_ubatch, that) rows (n_outputs_pp,
    /// llama-context.cpp:672), not n_ubatch: n_vocab x 4 B x (n_ubatch - n_parallel) less compute. False (the struct's
    /// default, for callers measuring libllama directly): n_outputs_max above.
    bool server_outputs = false;
    llamacpp_spec spec;            ///< speculative decoding (MTP, draft model): spec.cpp
    // --- the backend (compute_cuda.cpp; issue 14 items 1 and 5) ---
    std::optional<gpu_backend> backend; ///< --backend; empty = inferred from the GPUs (llamacpp_backend_of)
    /// --iogpu-wired-limit-mb N (`sudo sysctl iogpu.wired_limit_mb=N` on a Mac): an Apple GPU's Metal working set is
    /// N MiB (metal.h); 0 = macOS's default. plan_llamacpp budgets every Apple GPU from its working set.
    uint64_t iogpu_wired_limit_mb = 0;
    bool op_offload = true;             ///< false with --no-op-offload (cparams.op_offload, common/common.cpp:1747)
};

/// What a plan_llamacpp call is for. A search asks verdicts, and most of a replayed plan's cost is figures a verdict
/// does not read.
enum class llamacpp_plan_purpose {
    report,      ///< every figure (the default)
    /// fits() and every buffer it reads as in `report`; the scheduler replay skips the prompt graph's no_alloc
    /// reserve (llama.cpp's --fit figure, gpu_compute.prompt_bytes, read by reports alone), a third of a replayed plan
    verdict,
    /// a lower bound for the verdict: placement, weights, caches, state and extras, and nothing planned after the
    /// placement (compute buffers, the backend's terms, speculative decoding). Each of those only adds bytes to a
    /// device already placed, so a plan that does not fit this way does not fit at all (llamacpp_fits)
    lower_bound,
};

/// Context sizes as llama.cpp sets them (src/llama-context.cpp, llama_context constructor):
/// n_ctx = pad256(n_ctx) (then n_ctx_seq x n_seq when not unified); n_ctx_seq = pad256(n_ctx / n_seq) per
/// stream, or n_ctx when unified; n_batch = min(n_ctx, -b); n_ubatch = min(n_batch, -ub).
/// Example: -c 10000 -np 3 -> n_ctx_seq 3584, n_ctx 10752, 3 streams.
struct llamacpp_context {
    uint64_t n_ctx = 0;        ///< total cells over all streams, tokens
    uint64_t n_ctx_seq = 0;    ///< cells per stream (the context one sequence sees), tokens
    uint32_t n_seq = 1;        ///< sequences
    uint32_t n_stream = 1;     ///< KV streams: 1 when unified, else n_seq
    uint32_t n_batch = 0;      ///< logical batch, tokens
    uint32_t n_ubatch = 0;     ///< physical batch, tokens
    bool flash_attn = true;    ///< resolved flash attention
    /// Extra recurrent-state snapshots per sequence (cparams.n_rs_seq): --spec-draft-n-max with MTP on an architecture
    /// that can roll its recurrent state back (llm_arch_supports_rs_rollback, llama-arch.cpp:1112-1127; others clamp it
    /// to 0, llama-context.cpp:105-110); the state keeps max(1, n_seq) x (1 + n_rs_seq) rows
    /// (llama-memory-recurrent.cpp:101).
    uint32_t n_rs_seq = 0;
    uint32_t n_outputs_max = 0; ///< outputs reserved (llama-context.cpp:250): n_batch unless the settings say fewer
};

/// One KV cache as llama.cpp logs it: "llama_kv_cache: size = ... MiB (cells, layers, streams)".
/// Hybrid SWA models have two: "base" (full layers) and "swa" (window layers).
struct kv_cache_buffer {
    std::string name;             ///< "base" or "swa"
    uint64_t cells_per_stream = 0;///< tokens each stream holds
    uint32_t n_stream = 1;        ///< streams
    uint32_t n_layer = 0;         ///< layers in this cache
    uint64_t k_bytes = 0;         ///< all K tensors of the cache
    uint64_t v_bytes = 0;         ///< all V tensors of the cache (0 for MLA k_only)
    uint64_t bytes() const { return k_bytes + v_bytes; }
};

/// Fixed state, per sequence, independent of n_ctx, always f32:
/// - "llama_memory_recurrent: size = ... R (f32) ... S (f32)" (src/llama-memory-recurrent.cpp): the conv and SSM
///   states of the recurrent layers;
/// - "llama_dsv4_comp_state: ... size = ..." (src/llama-kv-cache-dsv4.cpp): the compressor states beside each
///   compressed cache (DeepSeek-V4), the blocks of `ratio` tokens not yet compressed.
struct recurrent_buffer {
    uint32_t n_layer = 0;     ///< layers holding a recurrent state (conv or SSM)
    uint32_t n_seq = 0;       ///< max(1, n_seq) state slots (0 without recurrent layers)
    uint64_t r_bytes = 0;     ///< conv states: n_layer * n_seq * n_embd_r * 4
    uint64_t s_bytes = 0;     ///< ssm/delta states: n_layer * n_seq * n_embd_s * 4
    uint64_t p_bytes = 0;     ///< per-layer-embedding conv states ("P (f32)"): n_seq * ple_conv_state * 4 per PLE layer
    uint64_t comp_bytes = 0;  ///< compressor states of compressed caches (see llamacpp_recurrent)
    uint64_t bytes() const { return r_bytes + s_bytes + p_bytes + comp_bytes; }
};

/// The five kinds of memory a llama.cpp context holds, in bytes.
struct buffer_set {
    uint64_t weights_bytes = 0; ///< model tensors
    uint64_t kv_bytes = 0;      ///< all KV caches
    uint64_t state_bytes = 0;   ///< recurrent state
    uint64_t output_bytes = 0;  ///< logits/embeddings output buffer (host)
    uint64_t compute_bytes = 0; ///< scheduler compute buffer
    uint64_t projector_bytes = 0; ///< --mmproj: projector weights + clip compute buffer (llamacpp_extras.h)
    uint64_t adapter_bytes = 0;   ///< --lora / --lora-scaled: adapter tensors with their base weights (llamacpp_extras.h)
    uint64_t total() const {
        return weights_bytes + kv_bytes + state_bytes + output_bytes + compute_bytes + projector_bytes + adapter_bytes;
    }
    /// Add another set field by field (per-device totals into the plan's total).
    buffer_set & operator+=(const buffer_set & o);
};

/// The model as llama.cpp builds it from the GGUF its converter writes. Where the architecture uses no sliding window
/// (the arch row's no_window: llama.cpp's models/llama.cpp, qwen2.cpp, qwen2moe.cpp, qwen3.cpp, qwen3moe.cpp and
/// mistral3.cpp load no LLM_KV_ATTENTION_SLIDING_WINDOW in v0.5.0 or 5b4ebc5, and conversion/llama.py / qwen.py write
/// none for them), the window and chunked caches a config.json states become full caches (n_swa 0), and `warnings`
/// gets one line naming the window and the architecture. Any other model is unchanged. Example: Mistral-7B-v0.1
/// (sliding_window 4096 on every layer in Hugging Face's terms): 32 full layers, 131,072 B per token in f16 (4 GiB
/// at 32,768), as its GGUF plans, not the window's 0.56 GiB. Where the architecture hard-codes its chunk (llama4:
/// models/llama4.cpp sets n_swa = 8192, both releases; conversion/llama4.py writes no chunk size), the chunked caches
/// take that chunk, with a warning naming the config's attention_chunk_size when it differs (16384 -> 8192).
/// Used by every llama.cpp and Ollama plan (runtime_info::adapt_model), `kvfit exec`, `fit-params` and `explain`.
void llamacpp_adapt_model(model_desc & m, std::vector<std::string> & warnings);

/// Context sizing exactly as llama.cpp does. Throws kvfit::error for n_seq 0, n_ubatch 0, an n_ctx over
/// 2^32 tokens, a quantized V cache without flash attention ("type_v q8_0 needs flash attention",
/// llama_context refuses the same), different K and V types on an MLA model (llama_init_from_model refuses
/// them), and for n_ctx 0 with a model whose n_ctx_train is unknown.
llamacpp_context llamacpp_context_size(const model_desc & m, const llamacpp_settings & s);

/// The KV caches (0, 1 or 2 of them) for the given context: full/MLA layers hold n_ctx_seq cells per stream,
/// window layers pad256(min(n_ctx_seq, n_swa * (unified ? n_seq : 1) + n_ubatch)) (chunked layers use n_chunk)
/// unless swa_full (then both caches stay, the window one with n_ctx_seq cells). Source: llama_kv_cache_iswa (src/llama-kv-cache-iswa.cpp), llama_kv_cache (src/llama-kv-cache.cpp).
std::vector<kv_cache_buffer> llamacpp_kv_caches(const model_desc & m, const llamacpp_settings & s,
                                                const llamacpp_context & c);

/// KV bytes held by layer `il` (K and V over all streams); 0 for layers without KV. The per-layer view of
/// llamacpp_kv_caches, used to place each layer's cache on its device. `il` may also name an MTP layer
/// (n_layer <= il < n_layer + n_layer_mtp): they hold no cache, except in a model with compressed caches, whose window
/// cache covers every block of the file (llama_kv_cache_dsv4, src/llama-kv-cache-dsv4.cpp:1246; deepseek4.cpp:73).
uint64_t llamacpp_kv_layer_bytes(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c,
                                 uint32_t il);

/// llamacpp_kv_layer_bytes of every layer, MTP layers included (n_layer + n_layer_mtp entries), in one pass:
/// O(n_layer), where asking layer by layer is O(n_layer) per layer (the model-wide V width is re-derived each time).
std::vector<uint64_t> llamacpp_kv_bytes_by_layer(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c);

/// Fixed state for the given context, f32. Recurrent layers: max(1, n_seq) rows of each state cache's width per
/// layer (Qwen3.5-9B: 24 x (24,576 + 524,288) x 4 = 52,690,944 B per sequence). Compressed caches (DeepSeek-V4,
/// llama_dsv4_comp_state): per layer two f32 tensors (kv, score) of n_embd_state x state_size x n_seq, where the
/// ratio-4 caches (CSA and its indexer) compress overlapping windows, n_embd_state = 2 x width and state_size =
/// 2 x 4, and the ratio-128 cache (HCA) n_embd_state = width, state_size = 128 (src/llama-kv-cache-dsv4.cpp:1313-1330).
/// DeepSeek-V4-Flash: 21 x 2 x 1024 x 8 x 4 + 20 x 2 x 512 x 128 x 4 + 21 x 2 x 256 x 8 x 4 = 12,206,080 B per sequence.
recurrent_buffer llamacpp_recurrent(const model_desc & m, const llamacpp_context & c);

/// Fixed state bytes held by layer `il` (its share of llamacpp_recurrent), to place it with the layer.
uint64_t llamacpp_state_layer_bytes(const model_desc & m, const llamacpp_context & c, uint32_t il);

/// Output buffer: n_vocab * n_seq * 4 bytes (logits for one output per sequence), host memory
/// (llama_context::output_reserve).
uint64_t llamacpp_output_bytes(const model_desc & m, const llamacpp_context & c);

/// Compute buffer of the scheduler for one device (CPU backend) that runs the whole graph, bytes: the peak of
/// the reserve graph (n_ubatch tokens rounded up to a multiple of n_seq, n_ctx_seq KV cells per stream, logits for
/// min(n_ubatch, n_batch) outputs) as ggml-alloc packs it, max over graph stages chosen by layer features (mla,
/// recurrent kind, window layers, MoE), never by architecture name. Terms and the graph tensor each stands for:
/// src/runtimes/llamacpp/compute*.cpp. Byte-exact on all 254 rows of ../shared/reference/llamacpp/results.csv and
/// on tests/data/llamacpp_compute.csv except its documented misses. Example: Qwen3.5-9B, 248320-token vocabulary,
/// -ub 512 -c 32768 -fa on: 2048 + 512 x (248320 + 3 x 4096) x 4 = 533727232 B (509.00 MiB).
uint64_t llamacpp_compute_bytes(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c);

/// Why llamacpp_compute_bytes does not model this model's reserve graph under these settings, from features; ""
/// when it does. Plans then mark the compute buffer as an estimate and warn with this reason (every output):
/// - hyper-connections (n_hc > 1: DeepSeek-V4 src/models/deepseek4.cpp, Qwen3.8-Flash-Next qwen4exp.cpp) without a
///   recorded graph for the shape, release and cache types: no stage set derived; measured up to 4.8x larger
///   (DeepSeek-V4-Flash -c 32768 -ub 256 without flash attention, before its graph was recorded);
/// - MLA + KDA with attention residuals (attn_res_block, Kimi-K3 kimi-k3.cpp): fitted stages, measured up to 9.4 %
///   larger with several sequences;
/// - a DSA indexer on some MLA layers only (GLM-5.2's indexer types, glm-dsa.cpp): measured up to 7.8 % smaller;
/// - an MSA indexer with a quantized V and an unquantized K (only V Hadamard-rotated, minimax-m3.cpp): measured
///   12.9 % larger. Measurements: tests/conformance/measured, docs/accuracy.md.
/// A model whose reserve graph was recorded from the real llama.cpp (data/graphs, src/runtimes/llamacpp/graph_replay.h)
/// is replayed to the byte and is modelled; with `c`, also whether the recording covers that context.
std::string llamacpp_compute_unmodelled(const model_desc & m, const llamacpp_settings & s,
                                        const llamacpp_context * c = nullptr);

/// Bytes of one cell (one stream) of cache `c` of layer `il` as llama.cpp allocates it
/// (llama_kv_cache constructor, src/llama-kv-cache.cpp): row_size(type_k, K width) + row_size(type_v, V width), where
/// - an MLA model (any latent cache) keeps no V in any cache, its DSA indexer included (has_v = !is_mla());
///   mla_layout::k_and_v (the layout before llama.cpp's V-less MLA cache) keeps kv_lora_rank V values by the latent;
/// - the indexer of a non-MLA model (MiniMax-M3's MSA: llama_kv_cache_msa) keeps a V of one V head of the layer;
///   a hybrid model's indexer (llama_memory_hybrid_idx, Qwen3.8-Flash-Next) too in 5b4ebc5, K only in v0.5.0;
/// - without flash attention every V row is padded to the widest V row of the model (n_embd_v_gqa_max()).
/// Examples, f16: Qwen3.5-9B full layer 4 x 256 x 2 + 4 x 256 x 2 = 4096 B; DeepSeek-V3.2 latent 576 x 2 = 1152 B and
/// indexer 128 x 2 = 256 B; gemma-4 global layer without flash attention 2 x 512 x 2 + 2048 x 2 = 6144 B.
uint64_t llamacpp_cell_bytes(const model_desc & m, uint32_t il, const layer_cache & c, ggml_type type_k,
                             ggml_type type_v, mla_layout mla = mla_layout::k_only, bool flash_attn = true,
                             llamacpp_release release = llamacpp_release_default);

/// The row widths, in elements, of the K and V tensors llama.cpp allocates for cache `ic` of layer `il`
/// (caches[il][ic]), by the rules of llamacpp_cell_bytes: K is the cache's width_k(); V is 0 where no V tensor is
/// made (MLA, a v0.5.0 hybrid indexer, a state cache), one V head for a non-MLA indexer (MiniMax-M3's MSA, 128;
/// Qwen3.8-Flash-Next's in 5b4ebc5, 256), the widest V row of the model without flash attention. A CUDA buffer pads
/// each quantized tensor by its row width (MATRIX_ROW_PADDING, compute_cuda.cpp), so it needs the width, not the bytes.
/// Result: n_layer entries, each as many as that layer's caches, in one O(n_layer) pass.
struct cache_row_widths {
    uint64_t k = 0; ///< elements per cell of the K tensor
    uint64_t v = 0; ///< elements per cell of the V tensor (0: none)
};
std::vector<std::vector<cache_row_widths>> llamacpp_cache_row_widths(const model_desc & m, const llamacpp_settings & s);

/// llamacpp_cell_bytes of each layer's attention cache (model_desc::attention_cache; 0 for a layer without one)
/// under the settings' types, flash attention and release, n_layer entries in one O(n_layer) pass.
std::vector<uint64_t> llamacpp_attention_cell_bytes(const model_desc & m, const llamacpp_settings & s);

/// KV bytes per token of the caches that grow with every token (full, latent, indexer of ratio 1), for given cache
/// types: the sum over those caches of llamacpp_cell_bytes. Window caches are capped and compressed caches grow by
/// 1/ratio: neither is counted here. Qwen3.5-9B f16: 8 * 2 * 4 * 256 * 2 = 32768; DeepSeek-V3.2: 61 * (576 + 128) * 2
/// = 85888.
uint64_t kv_bytes_per_token(const model_desc & m, ggml_type type_k, ggml_type type_v,
                            mla_layout mla = mla_layout::k_only, bool flash_attn = true,
                            llamacpp_release release = llamacpp_release_default);

/// The seeds' hypothetical column: kv_bytes_per_token of all_full_attention_variant(m) (every layer cached like the
/// model's reference attention layer). 0 when the model has no attention cache.
uint64_t kv_bytes_per_token_if_all_full(const model_desc & m, ggml_type type_k, ggml_type type_v,
                                        mla_layout mla = mla_layout::k_only, bool flash_attn = true,
                                        llamacpp_release release = llamacpp_release_default);


// ============================================================================================================
// The backend and its compute terms (src/runtimes/llamacpp/compute_cuda.cpp; docs/rules/llamacpp-cuda.md)
// ============================================================================================================

struct llamacpp_plan;

/// "cuda", "rocm", "vulkan", "metal", "cpu".
const char * gpu_backend_name(gpu_backend b);

/// The `--backend` value: cuda, rocm (also hip), vulkan, metal or cpu, case-insensitive.
/// Throws kvfit::error "--backend 'x': expected cuda, rocm, vulkan, metal or cpu".
gpu_backend parse_gpu_backend(std::string_view text);

/// The backend a plan is made for, and where it came from.
struct backend_choice {
    gpu_backend backend = gpu_backend::cpu;
    /// How it was chosen, one line: "--backend", "RTX 4090 is an NVIDIA GPU", "no GPU",
    /// "assumed: --gpu gave sizes only (pass --backend to choose)".
    std::string source;
    bool assumed = false; ///< no GPU named one and --backend was not given (sized GPUs): cuda assumed
};

/// The backend for these GPUs: `given` (--backend) when set; else from each GPU: its vendor (device_spec::vendor, from
/// data/gpus.csv or the detection tool, or a CUDA compute capability: NVIDIA -> cuda, AMD -> rocm, Apple -> metal),
/// a driver or log name by its words ("NVIDIA", "GeForce",
/// "Tesla", "Quadro" -> cuda; "AMD", "Radeon", "Instinct" -> rocm; "Apple" -> metal) or its ggml device prefix
/// ("CUDA0", "ROCm0", "Vulkan0", "Metal", "MTL0": `kvfit explain`); no GPU -> cpu; GPUs named by size only ->
/// cuda, assumed (backend_choice::assumed). Throws kvfit::error for --backend cpu with GPUs ("--backend cpu: a CPU
/// build offloads nothing; drop --gpu"), a GPU backend without GPUs ("--backend cuda needs a GPU (--gpu)"), GPUs of
/// two vendors without --backend, and a backend the named GPU cannot run ("--backend metal: RTX 4090 is an NVIDIA
/// GPU (cuda or vulkan)").
backend_choice llamacpp_backend_of(const std::vector<device_spec> & gpus, std::optional<gpu_backend> given);

/// One backend-dependent term of a plan, named after the ggml tensor it stands for (docs/rules/llamacpp-cuda.md).
/// The figures are estimates read from ggml's sources and public logs: no CUDA runtime runs in kvfit's tests.
struct backend_term {
    std::string name;          ///< "flash_attn_ext_f16_kv" (C2), "pp_input_copies" (C3), "op_offload_staging" (C4),
                               ///< "quantized_row_padding" (C5)
    uint32_t device = 0;       ///< index into llamacpp_plan::devices (a GPU)
    std::string buffer;        ///< the buffer it enlarges: "compute" (C2-C4) or "weights" (C5)
    uint64_t tensor_bytes = 0; ///< the tensor(s) it stands for (the f16 K/V scratch, the copies, the staged weights)
    uint64_t added_bytes = 0;  ///< what the buffer grows by on that device (a scratch can fit under the CPU graph's peak)
    bool applied = true;       ///< false: a CUDA term on another GPU backend, not added (the plan warns instead)
    std::string what;          ///< one line: the tensor and the rule's source file
};

/// The f16 copies of a quantized K/V that CUDA's flash-attention kernel needs (C2, K7): for layer `il` with an
/// attention cache, when flash attention is on and type_k (type_v) is not f16, pad128 + n_kv x n_stream x
/// n_embd_k_gqa x 2 B (and the same for V unless V is a view of K, as in MLA): ggml_cuda_flash_attn_ext_get_alloc_size
/// (ggml/src/ggml-cuda/fattn.cu:719-756, fattn-common.cuh:53-85), MMA_F16/TILE kernels for the n_ubatch-token reserve
/// graph. n_kv is the layer's cache cells per stream (the window cache for window layers). 0 otherwise.
/// Qwen3.5-4B (4 x 256), 262,144 cells, q8_0: 2 x (128 + 262144 x 1024 x 2) = 1,073,742,080 B (K7's 1.0 GiB).
uint64_t llamacpp_cuda_fa_f16_bytes(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c,
                                    uint32_t il);

/// The second copy of token_embd.weight that a loader creating its tied output first makes (arch_facts
/// tied_output_first: models/gemma4.cpp, gemma3n.cpp call create_tensor(TOKEN_EMBD, TENSOR_DUPLICATED) before
/// tok_embd, so llama_model_loader::create_tensor finds no token_embd in the CPU context and dups it). With mmap both
/// tensors point into the one mapped range (counted once, CPU_Mapped); without mmap, and in no_alloc mode, the CPU
/// buffer holds both (measured, gemma-4-26B-A4B, both releases: no_alloc model buffer = mmap + 281,600 B at 512 tokens,
/// + 144,179,200 B at 262,144). token_embd.weight's bytes are its share of the input-layer group (exact when the
/// group is that tensor alone; gemma3n's per-layer embedding shares it).
/// In bytes; 0 for other models or without an exact tensor list (placement.cpp).
uint64_t llamacpp_tied_duplicate_bytes(const model_desc & m);

/// Fill plan.backend and plan.backend_terms and add the applied terms to the GPUs' buffers (called by plan_llamacpp
/// once the CPU-graph compute buffer is placed): C2 and C4 raise a GPU's compute buffer to the larger of the CPU
/// graph's peak and the node stage holding the term, C3 adds its copies, C5 pads the GPU's quantized weights. C3
/// applies to every GPU backend (ggml-backend.cpp, async + events on CUDA/HIP, Vulkan, Metal); C2, C4, C5 to cuda only.
void llamacpp_apply_backend_terms(llamacpp_plan & plan, const model_desc & m, const std::vector<device_spec> & gpus);

// ============================================================================================================
// Placement on devices (src/runtimes/llamacpp/placement.cpp)
// ============================================================================================================

/// Default free memory kept on each GPU: 1024 MiB, the target of llama.cpp's own --fit
/// (common/common.h: fit_params_target = 1024 MiB per device). It covers the CUDA context (a few hundred
/// MiB), the driver's and other processes' memory. `--margin` changes it.
inline constexpr uint64_t default_margin_bytes = 1024ull << 20;

/// Where llama.cpp puts tensors: -ngl, --no-kv-offload, -ts, and MoE experts kept on the CPU.
struct placement_settings {
    int32_t n_gpu_layers = -1;        ///< -ngl; -1 (or anything >= n_layer + 1) offloads every block and the output
    bool no_kv_offload = false;       ///< --no-kv-offload: KV caches and recurrent state in host memory
    std::vector<double> tensor_split; ///< -ts proportions per GPU; empty = by device memory (llama.cpp: by free memory)
    uint32_t n_cpu_moe = 0;           ///< --n-cpu-moe N: routed experts of the first N blocks on the CPU
    bool cpu_moe = false;             ///< --cpu-moe: all routed experts on the CPU
    /// -ot/--override-tensor "regex=CPU" rules, matched with std::regex_search as llama.cpp does
    /// (common/arg.cpp, tensor_buft_overrides) against each block's tensor names. kvfit keeps tensors per
    /// block, not per name, so a rule is tested on a representative routed-expert name
    /// ("blk.<il>.ffn_up_exps.weight": moves the block's expert bytes) and on a representative non-expert
    /// name ("blk.<il>.attn_q.weight": moves the rest of the block). Only the CPU target is modelled.
    std::vector<std::string> override_tensor_cpu;
    /// --cpu-features: the CPU the host-resident weights run on, which decides the libggml-cpu variant and its extra
    /// buffer types (AMX, CPU_REPACK; llamacpp_cpu.h). Default: assumed AVX2 (llamacpp_cpu_assumed).
    cpu_features cpu = llamacpp_cpu_assumed();
    /// --mmap / --no-mmap / --load-mode: the file is memory-mapped (llama.cpp's default, load_mode auto / mmap).
    /// With mmap the plain CPU weights are one mapped file range, so a weight moved into an extra buffer that lies
    /// inside it is counted twice (llama_model::memory_breakdown).
    bool mmap = true;
    bool repack = true;  ///< --repack / --no-repack (-nr): llama.cpp's use_extra_bufts; false = no extra buffer
    /// --no-host: no GPU host (pinned) buffer type ahead of the extra types. Without it, a plan with GPUs keeps its
    /// host-resident weights in the host type (the plain CPU buffer under mmap): no extra buffer.
    bool no_host = false;
};

/// Memory on one device (or the host) under a plan.
struct device_usage {
    std::string name;            ///< GPU name, or "host" for system RAM
    bool is_host = false;        ///< true for system RAM
    uint64_t capacity_bytes = 0; ///< device memory; 0 for the host (unbounded here)
    uint64_t margin_bytes = 0;   ///< kept free on this device
    uint32_t n_layers = 0;       ///< blocks placed here (the output layer not counted)
    bool has_output = false;     ///< output layer (and its logits) placed here
    buffer_set used;             ///< bytes per buffer kind
    /// Bytes left after the margin: capacity - margin - used.total(); negative when it overflows.
    int64_t free_bytes() const;
    /// The part of `used` that belongs to speculative decoding: the MTP context (its KV in kv_bytes, its compute in
    /// compute_bytes, the NextN weights llama-server loads with draft-mtp in weights_bytes) and a draft model's
    /// weights, KV, state and compute (spec.cpp). Reported as their own buffers.
    buffer_set spec;
    /// True when used.total() + margin <= capacity (always true for the host).
    bool fits() const;
};

/// A complete llama.cpp plan for one setting.
struct llamacpp_plan {
    llamacpp_settings settings;          ///< the settings as given
    /// How the GPUs' memory was budgeted, one line each: an Apple GPU plans against Metal's working set
    /// (metal_budget, metal.h), as ggml-metal reports it to -fit. Copied to the runtime_plan's notes.
    std::vector<std::string> notes;
    placement_settings placement;        ///< the placement as given
    llamacpp_context ctx;                ///< sizes as llama.cpp sets them
    std::vector<kv_cache_buffer> kv;     ///< KV caches
    recurrent_buffer rs;                 ///< recurrent state
    buffer_set total;                    ///< all buffers, all devices
    std::vector<device_usage> devices;   ///< GPUs in order, then the host
    uint32_t n_gpu_layers = 0;           ///< effective -ngl (output layer counted, as llama.cpp logs "offloaded N/M")
    /// Per block il (length n_layer): index into `devices` of the device -ngl gives the block; its KV cache
    /// and recurrent state live there unless --no-kv-offload. Read by the speed model (speed.h).
    std::vector<uint32_t> layer_device;
    /// Per block il: device of the block's non-expert weights (the host when an -ot rule moves them).
    std::vector<uint32_t> weight_device;
    /// Per block il: device of the block's routed-expert weights (the host under --cpu-moe, --n-cpu-moe, -ot).
    std::vector<uint32_t> expert_device;
    /// The model buffers of the host-resident weights as llama.cpp's CPU backend allocates them (llamacpp_cpu.h),
    /// when the model lists its tensors (a GGUF): plain (CPU_Mapped or CPU), AMX, CPU_REPACK. host_weights_exact
    /// false: no tensor list, the host weights are the groups' bytes and no extra buffer is modelled.
    cpu_weight_buffers host_weights;
    bool host_weights_exact = false;
    /// True when the CPU extra buffer types are in play: repack on, and no GPU (or --no-host).
    bool extra_buffers_used = false;
    bool fits() const;                   ///< every GPU within capacity - margin
    /// What it was planned for (plan_llamacpp's purpose): anything but `report` leaves out figures only a report
    /// reads (llamacpp_plan_purpose).
    llamacpp_plan_purpose purpose = llamacpp_plan_purpose::report;
    /// Speculative decoding (spec.cpp), when settings.spec.active(): the draft / MTP context's sizes and buffers.
    struct spec_usage {
        bool mtp = false;              ///< an MTP context on the model's NextN layers
        bool draft = false;            ///< a separate draft model
        llamacpp_context ctx;          ///< the draft / MTP context (n_ctx the target's, or n_ctx_train: spec_draft_ctx)
        uint32_t n_layer_kv = 0;       ///< MTP: NextN layers that keep KV
        buffer_set bytes;              ///< all devices: weights (draft model / NextN block), kv, state, compute
        bool compute_estimate = false; ///< the MTP compute buffer is an estimate (spec.cpp says how)
        bool compute_upper_bound = false; ///< that estimate is the target's compute at the MTP context's sizes
        bool compute_fitted = false;   ///< that estimate is the closed form fitted on the dense Qwen3.5 rows
        std::string why;               ///< what an estimate or an unmodelled part is ("" when exact)
    } spec;
    // --- the backend (compute_cuda.cpp) ---
    backend_choice backend;                  ///< the backend planned and why
    std::vector<backend_term> backend_terms; ///< its terms on the GPUs (applied or only warned about)
    /// How the compute buffers on GPUs were obtained (compute_cuda.cpp, compute_sched.cpp).
    struct gpu_compute_source {
        /// true: llama.cpp's reserve graph, recorded from the real runtime, split by a replay of its scheduler over the
        /// release's CUDA devices (exact: checked against the release's ggml-cuda on a simulated device) or v0.5.0's
        /// Vulkan devices (ggml-vulkan's answers from source, the driver's limits assumed: `assumed`)
        bool replayed = false;
        /// true: the one-GPU full-offload rule (detail::full_offload_compute), exact where the CPU graph is
        bool full_offload_rule = false;
        std::string variant;               ///< the replayed template variant ("llama v0.5.0 graph fa=1 kv=f16 st=1")
        std::vector<uint64_t> prompt_bytes;///< per device: the prompt graph's buffers (a no_alloc fit's figure)
        int n_splits = 0;                  ///< the replayed prompt graph's splits
        int n_copies = 1;                  ///< graph copies (4 under pipeline parallelism)
        std::string why;                   ///< why the graph was not replayed ("" when it was, or without GPUs)
        /// what a replay assumed rather than read from the runtime's source ("" for CUDA/HIP): a Vulkan device's
        /// driver limits per vendor (backend_vulkan.h vulkan_limits_of); warned about in every output
        std::string assumed;
    } gpu_compute;
};

/// The CPU graph's compute buffer (llamacpp_compute_bytes) on every device that runs part of the graph: each GPU
/// holding a block or the output, and the host when it runs a block or the output (or is the only device). The
/// estimate path of a plan with GPUs starts from it (compute_cuda.cpp); a CPU build's plan is this alone.
void llamacpp_place_graph_compute(llamacpp_plan & plan, const model_desc & m);

/// Plan a setting on the given GPUs (empty = CPU only: everything in host memory).
/// Placement follows llama.cpp src/llama-model.cpp load_tensors: the token embedding stays on the CPU;
/// block il is offloaded when il >= n_layer + 1 - ngl, the output layer whenever ngl >= 1; offloaded blocks
/// are split across GPUs by -ts proportions (upper_bound over cumulative fractions). KV and recurrent state
/// live with their layer unless --no-kv-offload. The output buffer is host memory. The compute buffer is
/// charged to every device that runs part of the graph (see llamacpp_compute_bytes).
/// Host-resident weights of a model that lists its tensors (a GGUF) are placed tensor by tensor as llama.cpp's
/// CPU backend does (llamacpp_cpu_weight_buffers with p.cpu and p.mmap; docs/rules/llamacpp-cpu-repack.md): the
/// host's weights grow by what the extra buffers add over the plain buffer (with mmap, each moved weight inside the
/// mapped range once more; AMX packing). Extra buffers apply without GPUs, or with --no-host, and not with
/// --no-repack (llama-model.cpp make_cpu_buft_list: the GPU's host buffer type comes first).
/// With speculative decoding (settings.spec) the draft / MTP context's buffers are added on their devices
/// (llamacpp_add_spec), so fits() and every search include them.
/// purpose: what the plan is for (llamacpp_plan_purpose); a search asks llamacpp_fits instead.
/// Throws kvfit::error for invalid settings (see llamacpp_context_size) or a -ts of the wrong length.
llamacpp_plan plan_llamacpp(const model_desc & m, const llamacpp_settings & s, const placement_settings & p,
                            const std::vector<device_spec> & gpus, uint64_t margin_bytes = default_margin_bytes,
                            llamacpp_plan_purpose purpose = llamacpp_plan_purpose::report);

/// plan_llamacpp(..., verdict).fits(), with an exact pre-check first: a plan whose lower bound (purpose
/// lower_bound: weights, caches and state alone) overflows a GPU is refused without its compute graph replayed.
/// check_host_ram: with s.ram_bytes given (--ram, --gpu auto), the host's needs must fit it too
/// (llamacpp_host_ram(...).over, host_ram.cpp), as the runtime's verdict asks. The verdict every search over
/// llama.cpp's settings asks. Throws as plan_llamacpp.
bool llamacpp_fits(const model_desc & m, const llamacpp_settings & s, const placement_settings & p,
                   const std::vector<device_spec> & gpus, uint64_t margin_bytes = default_margin_bytes,
                   bool check_host_ram = false);

/// The largest n_ctx (a multiple of 256 x streams) for which plan_llamacpp(...) fits with the given cache
/// types, searching up to the model's n_ctx_train (or `limit` when non-zero). 0 when not even 256 tokens fit.
/// Monotone search over the KV size; the compute buffer is re-evaluated at each candidate.
uint64_t max_fitting_n_ctx(const model_desc & m, llamacpp_settings s, const placement_settings & p,
                           const std::vector<device_spec> & gpus, uint64_t margin_bytes, uint64_t limit = 0);

// ============================================================================================================
// llama.cpp's own fit (common/fit.cpp, v0.5.0; src/runtimes/llamacpp/fit_params.cpp): `kvfit fit-params`

/// One device's memory as common_get_device_memory_data_impl (common/fit.cpp) collects it, bytes: model (weights),
/// context (KV caches + recurrent state: llama_context::memory_breakdown) and compute (the scheduler's buffer, the
/// prompt graph alone as ggml_backend_sched_reserve_size sizes it where the graph is replayed). The output (logits)
/// buffer is in none of them.
struct llamacpp_device_memory {
    uint64_t model = 0, context = 0, compute = 0;
    uint64_t total() const { return model + context + compute; }
};

/// Per GPU (in order), then the host last (always present, zero when nothing is there): the memory data fit.cpp
/// measures for these settings. Throws as plan_llamacpp.
std::vector<llamacpp_device_memory> llamacpp_device_memory_data(const model_desc & m, const llamacpp_settings & s,
                                                                const placement_settings & p,
                                                                const std::vector<device_spec> & gpus);

/// What llama_fit_params prints: "-c n_ctx -ngl n_gpu_layers[ -ts A,B][ -ot \"P=CPU,...\"]".
struct llamacpp_fit_result {
    uint64_t n_ctx = 0;                 ///< tokens; 0 = the model's training context (--fit-ctx 0, fit.cpp:414)
    int32_t n_gpu_layers = -1;          ///< -ngl (blocks + the output layer)
    std::vector<uint32_t> tensor_split; ///< layers per device when more than one GPU (-ts)
    std::vector<std::string> overrides; ///< -ot patterns placed on the CPU (routed experts of the first blocks)
};

/// A fit.cpp abort ("n_gpu_layers already set by user to 20, abort", "cannot fit ..."): llama-fit-params exits 1.
class llamacpp_fit_failure : public error {
public:
    using error::error;
};

/// common_params_fit_impl (common/fit.cpp, v0.5.0) on kvfit's figures. targets: --fit-target bytes per GPU (one
/// value: every GPU; empty: fit.cpp's 1024 MiB each); fit_ctx: --fit-ctx (fit_params_min_ctx, 4096 by default);
/// ngl_given: -ngl as common_params holds it when the user gave one ("all" = -2). Steps 1 (no change when every GPU
/// keeps its target free) and 2 (with s.n_ctx 0, the context interpolated between fit_ctx x streams and n_ctx_train
/// x sequences, rounded down to 256 x streams; fit.cpp:394-431) exactly; step 3: the largest -ngl for a dense model,
/// the fewest blocks whose routed experts stay on the CPU for a MoE model (fit.cpp's LAYER_FRACTION_MOE patterns);
/// fit.cpp's whole-tensor partial layers are not reproduced. Throws llamacpp_fit_failure where fit.cpp aborts (no GPU,
/// -ngl / -ts / -ot already set, nothing fits) and kvfit::error as plan_llamacpp.
llamacpp_fit_result llamacpp_fit_params(const model_desc & m, llamacpp_settings s, const placement_settings & p,
                                        const std::vector<device_spec> & gpus, const std::vector<uint64_t> & targets,
                                        uint64_t fit_ctx, std::optional<int32_t> ngl_given);

// ============================================================================================================
// Speculative decoding (src/runtimes/llamacpp/spec.cpp; docs/rules/llamacpp-spec.md)
// ============================================================================================================

/// Bytes of the MTP draft context llama-server creates with `--spec-type draft-mtp` (common_speculative_init_result,
/// common/speculative.cpp:2531-2590): a second llama_context on the same model (no weights of its own) whose KV holds
/// only the NextN layer(s) (create_memory filter il >= n_layer, llama-model.cpp:2539-2546, 2677-2683), n_ctx_seq
/// cells per stream at the -ctkd/-ctvd types (f16 default), one 576-wide latent on MLA models (deepseek32/glm-dsa,
/// llama-model.cpp:2322-2344, no indexer); no recurrent state. Example: Qwen3.5-27B's MTP layer at 190,464 tokens,
/// f16: 190464 x 4 x 256 x 2 x 2 = 780,140,544 B (measured, tests/conformance/measured/spec-k6.v0.5.0.jsonl).
/// The compute buffer: see llamacpp_mtp_compute_bytes. Throws kvfit::error "--spec-type draft-mtp: the model has no
/// NextN (MTP) layers" (llama_init_from_model refuses it, llama-context.cpp:3822-3826).
struct mtp_buffers {
    uint32_t n_layer_kv = 0;   ///< NextN layers that keep KV
    uint64_t kv_bytes = 0;     ///< their KV over all streams
    uint64_t compute_bytes = 0;///< the MTP graph's compute buffer (an estimate: `estimate`, `why`)
    bool estimate = true;
    /// the compute is the target's own at the MTP context's sizes, an upper bound (a graph not derived: MoE, MLA,
    /// windows, flash attention off); neither this nor `fitted`: the target's figure where it is not modelled either
    bool upper_bound = false;
    bool fitted = false; ///< the closed form fitted on the dense Qwen3.5 rows (within 8.3 % of each)
    std::string why;
};
mtp_buffers llamacpp_mtp_buffers(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c);

/// The draft / MTP context's sizes (common/speculative.cpp:2531-2590): the target's n_ctx (total, so the same n_ctx_seq
/// per stream), n_seq, n_batch, n_ubatch and flash attention, n_rs_seq 0, n_outputs_max = n_parallel (:2500), the
/// -ctkd/-ctvd types; n_ctx_train instead with spec_draft_ctx::n_ctx_train (build 9893). `dm` is the model the
/// context runs on (the target for MTP, the draft model).
llamacpp_settings llamacpp_draft_settings(const model_desc & dm, const llamacpp_settings & target,
                                          const llamacpp_context & target_ctx);

/// Add the speculative-decoding buffers of p.settings.spec to plan `p` (called by plan_llamacpp): the MTP context's
/// KV and compute and the NextN weights (load_mtp, common.cpp:1713) on the device of the NextN block (the output
/// device with every layer offloaded, llama-model.cpp load_tensors); a draft model planned as its own llama_model on
/// its -devd GPUs with -ngld (common_base_params_to_speculative, speculative.cpp:2466-2520) and its buffers added
/// per device. Each device's `spec` records the share.
void llamacpp_add_spec(const model_desc & m, const std::vector<device_spec> & gpus, llamacpp_plan & p);

/// `--spec-type` value: a comma-separated list of llama.cpp's types; returns true when draft-mtp is in it. Types that
/// need no memory of their own (none, ngram-*) give false; a draft model's types (draft-simple, draft-eagle3, ...)
/// are valid with -md. Throws kvfit::error "--spec-type 'x': unknown type (allowed: ...)".
bool parse_spec_type(std::string_view value);

/// A device list as common/arg.cpp parse_device_list reads it (-dev, -devd): "CUDA0,CUDA1" / "none" -> GPU indices
/// (the trailing number of each device name); none -> {-1}. Throws kvfit::error "<flag> 'x': expected device names
/// such as CUDA0,CUDA1 or none", `flag` as typed.
std::vector<int32_t> parse_device_list(std::string_view flag, std::string_view value);

/// -devd: parse_device_list for the draft model's devices.
std::vector<int32_t> parse_draft_devices(std::string_view value);

// ============================================================================================================
// Flags (src/runtimes/llamacpp/flags.cpp): spelled and checked as llama.cpp common/arg.cpp does. Every function
// throws kvfit::error with a one-line message naming the flag and the value.
// ============================================================================================================

/// A KV cache type for -ctk/-ctv: one of llama.cpp's kv_cache_types (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl,
/// q5_0, q5_1). "-ctk 'q9_9': unknown cache type (allowed: ...)".
ggml_type parse_cache_type_flag(std::string_view flag, std::string_view name);

/// -fa / --flash-attn as llama.cpp reads it (common/arg.cpp: is_truthy, is_falsey, is_autoy): on, enabled, true, 1;
/// off, disabled, false, 0; auto, -1. "-fa 'maybe': expected on, off or auto (or 1, 0, true, false, -1)".
flash_attn_mode parse_flash_attn_flag(std::string_view flag, std::string_view value);

/// -c N as llama.cpp reads it: a plain token count from `min` to 2^32. common/arg.cpp parses int flags with std::stoi,
/// which reads "128K" as 128 and ignores the rest, so a suffix is refused with the count it means (K and k x 1024,
/// M and m x 2^20; vLLM's lower-case decimal reading is named too): "-c 128K: llama.cpp takes a plain number (its
/// std::stoi reads 128K as 128); did you mean -c 131072?". A number with thousands separators (a first part of 1-3
/// digits, then parts of exactly 3: "131,072") is refused too, here and in kvfit's comma list of contexts: "-c
/// 131,072: reads as one number with thousands separators; did you mean -c 131072? (a list of contexts below 1000 is
/// spelled by repeating the flag: -c 131 -c 072)". Other mistakes as parse_flag_count.
uint64_t parse_ctx_size_flag(std::string_view flag, std::string_view text, uint64_t min);

/// -ngl / --gpu-layers (and -ngld for a draft) as llama.cpp v0.5.0 reads it (common/arg.cpp:2785-2800): "auto" (-1,
/// the default: -fit chooses), "all" (-2) or an integer (std::stoi); llama_model::n_gpu_layers() (src/llama-model.cpp:
/// 1926) offloads every layer and the output for any negative value. Returns the count from 0 to 100000, or -1 for
/// every layer (auto, all, any negative integer). Throws kvfit::error "-ngl 'x': expected a non-negative integer,
/// auto, all or a negative integer (every layer)".
int32_t parse_ngl_flag(std::string_view flag, std::string_view text);

/// --fit-target / -fitt as llama.cpp reads it (common/arg.cpp, v0.5.0 and 5b4ebc5): MiB per device, separated by ','
/// or '/', one value broadcast to every device; a value with a unit (1GiB) is taken as that size. Bytes per device, in
/// order. Throws kvfit::error: "--fit-target 'x': expected MiB per device (1024, or 1024,2048)".
std::vector<uint64_t> parse_fit_target_flag(std::string_view flag, std::string_view text);

/// -ts proportions, comma- or slash-separated finite non-negative numbers (at most 1e9): "3,1" -> {3, 1}.
/// All zeros give an empty vector: llama.cpp's default split by free memory (llama_model::load_tensors).
std::vector<double> parse_tensor_split(std::string_view text);

/// One -ot rule "PATTERN=BUFFER": the pattern when BUFFER is CPU (validated as a std::regex, as llama.cpp
/// compiles it), std::nullopt for another buffer type (not modelled by kvfit). Throws for a rule without '='
/// or an invalid regular expression.
std::optional<std::string> parse_override_rule(std::string_view rule);

/// One -ot value as llama.cpp reads it: rules separated by commas ("exps=CPU,attn=CPU" is two rules;
/// common/arg.cpp parse_tensor_buffer_overrides: string_split(value, ','), v0.5.0 line 264), each in order.
std::vector<std::string> split_override_rules(std::string_view value);

/// The llama.cpp flags, parsed: what plan_llamacpp takes, the -c values and the margin.
struct llamacpp_inputs {
    llamacpp_settings settings;            ///< cache types, batch sizes, sequences, flash attention, release
    placement_settings placement;          ///< -ngl, -ts, -ot, --no-kv-offload, MoE on the CPU
    std::vector<uint64_t> contexts;        ///< -c values, tokens, as given (empty: none given)
    uint64_t margin_bytes = default_margin_bytes; ///< --margin
};

/// The llama.cpp flags of the registry (llamacpp_flags()), by JSON name, parsed with the CLI's one-line messages
/// (-md FILE is read here with load_model, the last file kept for the planner's repeated calls):
/// "-c 0: must be at least 1", "-ctk 'q9_9': unknown cache type (allowed: f32, ...)", "-fa 'maybe': expected on,
/// off or auto", "-ts '3,x': expected non-negative proportions like 3,1", "-ot 'x=CUDA0': only the CPU target is
/// modelled", "--n-outputs-max 'x': expected server, batch or a positive integer". Flags not given keep
/// llama-server's defaults (llamacpp_settings), server_outputs included (true unless --n-outputs-max batch|N).
llamacpp_inputs parse_llamacpp_flags(const flag_values & f);

/// The inverse: flag values that parse_llamacpp_flags turns back into these settings (`kvfit exec` plans the
/// command it read through the registry this way). n_ctx 0 gives no -c.
flag_values llamacpp_flag_values(const llamacpp_settings & s, const placement_settings & p, uint64_t margin_bytes);

/// The llama.cpp flags: -c, -ctk, -ctv, -fa, -ub, -b, -np, --kv-unified, --swa-full, --mla-kv, --llamacpp-version,
/// --margin, -ngl, --no-kv-offload, -ts, -ot, --cpu-moe, --n-cpu-moe, --cpu-features, --mmap, --no-mmap, --load-mode,
/// --no-repack, --no-host, --backend, --no-op-offload; speculative decoding (spec.cpp): --spec-type, --spec-draft-n-max,
/// -md, -ngld, -ctkd, -ctvd, -devd, --spec-draft-ctx, and -cd (refused: "-cd 4096: not a flag of llama.cpp v0.5.0 or
/// 5b4ebc5 ..."). Each with every spelling common/arg.cpp gives it (alias and alternates: --gpu-layers, --swa-checkpoints,
/// --model-draft), its metavar for --help and its shared setting (flag_setting: -c context, -np concurrency, -ctk / -ctv
/// cache types, -fa flash attention, --margin and -fitt the memory margin).
const std::vector<flag_spec> & llamacpp_flags();

/// llama.cpp's flags that a command line carries beside the planner's settings: the model (-m/--model, -hf/-hfr/
/// --hf-repo, -hff/--hf-file), llama-fit-params' -fit/--fit, -fitc/--fit-ctx, -fitp/--fit-print, and llama-server's
/// --repack, -sm/--split-mode, --embedding/--embeddings, --pooling, spelled as common/arg.cpp (v0.5.0) spells them.
/// `kvfit exec` (launch.h) and `kvfit fit-params` read them; they are no flag of the plan (the registry's flags are
/// llamacpp_flags()).
const std::vector<flag_spec> & llamacpp_command_flags();

/// llama-server / llama-cli flags that change no memory kvfit plans (server address, threads, sampling, prompt,
/// logging, --mlock, --cont-batching), spelled as common/arg.cpp (v0.5.0): `kvfit exec` passes them through without
/// naming them as not modelled. A boolean takes no value; every other one takes one.
const std::vector<flag_spec> & llamacpp_ignored_flags();

// ============================================================================================================
// The runtime interface (src/runtimes/llamacpp/plan.cpp)
// ============================================================================================================

/// The part of a runtime_plan any llama.cpp context gives (llama.cpp itself, and Ollama's llama-server): devices
/// with their buffers in allocation order (weights, kv, state, output, compute), the KV caches, per-token and
/// per-sequence bytes, fits (every GPU within capacity - margin), and detail: n_ctx, n_ctx_seq, n_seq, n_stream,
/// n_batch, n_ubatch, flash_attn, n_gpu_layers, output_device, recurrent{...} (docs/json.md).
runtime_plan llamacpp_runtime_plan(const model_desc & m, const llamacpp_plan & p);

/// The llama-server command that realises a plan of these settings at `n_ctx`: -m, -c, -np, --kv-unified, -ngl,
/// -fa, -ctk, -ctv, -ub, -b, --swa-full, -ts, --cpu-moe, --n-cpu-moe, --no-kv-offload, the speculative-decoding flags
/// (--spec-type draft-mtp, -md, --spec-draft-n-max, -ngld, -ctkd, -ctvd, -devd) when set, then --fit off (the plan fixes
/// every setting). The model is the GGUF path planned, or "<name>.gguf" for a catalog model, a config.json or an hf:
/// repository (llama-server loads a GGUF, never a config.json).
std::string llama_server_command(const model_desc & m, const llamacpp_settings & s, const placement_settings & p,
                                 uint64_t n_ctx);

/// The registry entry: flags, plan, the knobs (context -c by 256 x streams, -ngl, --n-cpu-moe) and the cache types
/// f16, q8_0, q4_0 the planner finds the largest context for.
runtime_info llamacpp_runtime();

} // namespace kvfit
