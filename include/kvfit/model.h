#pragma once
/// @file model.h
/// The model description: the one struct every source (catalog, config.json, GGUF, safetensors, remote)
/// builds and every runtime policy reads. It holds shapes only — no file format, no runtime setting.
///
/// Modelled on llama_hparams (llama.cpp src/llama-hparams.h): scalars for what is the same on every layer,
/// vectors of length n_layer for per-layer facts, and tiny const queries with an explicit layer index.

#include "kvfit/ggml_type.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kvfit {

/// One kind of memory a layer keeps across tokens. A layer keeps a list of them (model_desc::caches[il]):
/// a DSA layer an MLA latent and indexer keys, a DeepSeek-V4 layer a window and a compressed cache, a Falcon-H1
/// layer attention K/V and SSM state. llama.cpp keeps the same facts as independent per-layer flags and sizes
/// (llama_hparams::swa_layers[], recurrent_layer_arr[], n_embd_head_k_mla(), indexer_head_size).
/// - full:       attention K and V over the whole context (one cell per token).
/// - window:     sliding-window attention K and V: capped near `window` tokens (n_swa).
/// - chunked:    chunked local attention K and V (Llama 4): capped near `window` tokens (the chunk).
/// - latent:     MLA latent (DeepSeek-V2/V3): kv_lora_rank + rope values per token, stored as K; no V.
/// - indexer:    DSA / lightning-indexer keys (DeepSeek-V3.2, GLM-5): K only, one cell per `ratio` tokens.
/// - compressed: compressed attention K (DeepSeek-V4 CSA/HCA): one cell per `ratio` tokens.
/// - conv_state: fixed per sequence: the convolution (or RWKV token-shift) state, width_k() elements.
/// - ssm_state:  fixed per sequence: the SSM / Gated DeltaNet / KDA / RWKV-wkv state, width_k() elements.
/// - ple_state:  fixed per sequence: the per-layer-embedding convolution state of the layers that mix one in
///               (Qwen3.8-Flash-Next), width_k() elements.
enum class cache_kind : uint8_t { full, window, chunked, latent, indexer, compressed, conv_state, ssm_state, ple_state };

/// Name of a cache kind as used in reports and JSON: "full", "window", "chunked", "latent", "indexer",
/// "compressed", "conv_state", "ssm_state", "ple_state".
const char * cache_kind_name(cache_kind k);

/// One cache a layer keeps. Widths are elements per cell (per token, or per `ratio` tokens) for attention-like
/// caches, and elements per sequence for the two states. A runtime sizes it with its own element types and
/// cell rule; the model only says what is stored.
/// Examples: Llama-3.1-8B layer: {full, 8 heads, 128/128}; DeepSeek-V3 layer: {latent, 1 head, 576/0};
/// DeepSeek-V3.2 layer: {latent, 1, 576/0} + {indexer, 1, 128/0}; Qwen3.5-9B Gated DeltaNet layer:
/// {conv_state, 1, 24576/0} + {ssm_state, 1, 524288/0}.
struct layer_cache {
    cache_kind kind = cache_kind::full;
    uint32_t n_head = 0;     ///< heads stored per cell (KV heads; 1 for latent, indexer and states)
    uint32_t head_dim_k = 0; ///< K elements per head per cell; for a state: elements per sequence
    uint32_t head_dim_v = 0; ///< V elements per head per cell; 0 = no V cache (latent, indexer, compressed, states)
    uint32_t window = 0;     ///< window / chunked: tokens in the window or chunk; 0 for every other kind
    uint32_t ratio = 1;      ///< tokens per cell: 1, or the compression ratio of a compressed / indexer cache

    /// K elements per cell: n_head * head_dim_k (llama_hparams::n_embd_k_gqa for attention caches).
    uint64_t width_k() const { return uint64_t(n_head) * head_dim_k; }
    /// V elements per cell: n_head * head_dim_v; 0 without a V cache.
    uint64_t width_v() const { return uint64_t(n_head) * head_dim_v; }
    /// True when the cache gains cells as the context grows: full, latent, indexer, compressed (one cell per
    /// `ratio` tokens). Window and chunked caches are capped; states are fixed per sequence.
    bool grows_with_ctx() const;
    /// True for the fixed per-sequence states (conv_state, ssm_state, ple_state).
    bool is_state() const {
        return kind == cache_kind::conv_state || kind == cache_kind::ssm_state || kind == cache_kind::ple_state;
    }
    /// True for the layer's attention K/V (full, window, chunked, latent): the cache its attention reads.
    bool is_attention() const;
    bool operator==(const layer_cache &) const = default;

    /// An attention cache of `kind` (full, window, chunked) with n_head_kv heads of head_dim_k / head_dim_v.
    static layer_cache attention(cache_kind kind, uint32_t n_head_kv, uint32_t head_dim_k, uint32_t head_dim_v,
                                 uint32_t window = 0);
    /// An MLA latent of `width` values (kv_lora_rank + qk_rope_head_dim), K only.
    static layer_cache latent(uint32_t width);
    /// Indexer keys of `width` values (index_head_dim, one head), K only, one cell per `ratio` tokens.
    static layer_cache indexer(uint32_t width, uint32_t ratio = 1);
    /// A compressed K cache of `width` values, one cell per `ratio` tokens.
    static layer_cache compressed(uint32_t width, uint32_t ratio);
    /// A fixed state of `elements` per sequence (kind conv_state or ssm_state).
    static layer_cache state(cache_kind kind, uint32_t elements);
};

/// The attention type of a layer, derived from its caches (model_desc::kind_of): the label reports count and
/// the compute model dispatches on. mla: a latent cache; full / swa / chunked: that attention cache; recurrent:
/// states only; none: no cache at all (attention removed, MLP-only block, or KV shared with an earlier layer).
enum class layer_kind : uint8_t { full, swa, chunked, mla, recurrent, none };

/// Name of a layer kind as used in reports and JSON: "full_attention", "sliding_window", "chunked", "mla",
/// "recurrent", "none".
const char * layer_kind_name(layer_kind k);

/// The family of recurrent layer; decides the formulas of n_embd_r() / n_embd_s().
/// - gated_deltanet (Qwen3-Next, Qwen3.5): conv over q, k, v; a d_state x d_inner delta-rule state.
///   In llama.cpp's GGUF terms: ssm.inner_size = H_v * D_v, ssm.group_count = H_k, ssm.state_size = D_k.
/// - mamba2 (Nemotron-H, Granite 4.0-H, Falcon-H1, Mamba2): conv over x, B, C; d_state x d_inner state.
/// - mamba1 (Jamba, Mamba): conv over x only; d_state x d_inner state.
/// - short_conv (LFM2): conv state only, n_embd x (d_conv - 1).
/// - rwkv (RWKV-6/7): token-shift and wkv state (see n_embd_r / n_embd_s).
/// - kda (Kimi Linear, Kimi-K3 Kimi Delta Attention): conv over q, k, v of ssm_n_head heads of ssm_head_dim, and a
///   head_dim x head_dim state per head (llama_hparams::n_embd_r / n_embd_s, n_embd_head_kda != 0 branch).
/// - lightning (MiniMax-Text-01, MiniMax-M1: attn_type_list 0): linear attention without a convolution; one
///   ssm_head_dim x ssm_head_dim state per head of ssm_n_head heads (vLLM MambaStateShapeCalculator.
///   linear_attention_state_shape: (num_heads / tp, head_dim, head_dim)). llama.cpp has no such layer.
enum class recurrent_kind : uint8_t { none, gated_deltanet, mamba2, mamba1, short_conv, rwkv, kda, lightning };

/// Name of a recurrent kind: "none", "gated_deltanet", "mamba2", "mamba1", "short_conv", "rwkv", "kda", "lightning".
const char * recurrent_kind_name(recurrent_kind k);

/// Parameters and bytes of a group of weight tensors (one block, the token embedding, the output head).
/// `bytes` is exact when the source is a GGUF or safetensors file (weights_exact), otherwise 0 until a
/// weight format is applied (see apply_weight_format in sources.h).
struct weight_group {
    uint64_t n_params = 0;       ///< elements
    uint64_t bytes = 0;          ///< bytes on disk / in the runtime buffer, before alignment padding
    uint64_t expert_params = 0;  ///< subset of n_params held by routed-expert tensors (MoE *_exps)
    uint64_t expert_bytes = 0;   ///< subset of bytes held by routed-expert tensors
    bool operator==(const weight_group &) const = default;
};

/// One weight tensor as a GGUF file records it (gguf_tensor_info): its type, shape and place in the file, and the
/// block it belongs to. Runtimes that place weights tensor by tensor read these (llama.cpp's CPU extra buffers:
/// llamacpp_cpu.h). Example: Qwen3.5-9B's {"blk.0.ssm_beta.weight", f16, {4096, 32, 1, 1}, offset, 262144, 0, 0}.
struct weight_tensor {
    /// `layer` of a tensor outside the blocks: the input layer (token / position / per-layer embeddings, and tensors
    /// of no block, which llama.cpp's loader puts on the CPU with the input) and the output layer (output,
    /// output_norm). llama.cpp: LLM_TENSOR_LAYER_INPUT / _OUTPUT (src/llama-arch.cpp).
    static constexpr int32_t input = -1, output = -2;
    std::string name;
    ggml_type type = ggml_type::f32;
    uint64_t ne[4] = {1, 1, 1, 1}; ///< shape, ne[0] the row length (GGUF order)
    uint64_t offset = 0;           ///< offset in its file's data section, bytes
    uint64_t bytes = 0;            ///< ggml_nbytes: its data, unpadded
    uint32_t file = 0;             ///< shard index
    int32_t layer = input;         ///< block index ("blk.N."; >= n_layer for MTP/NextN blocks), input or output
    /// A runtime's second use of another tensor's bytes (llama.cpp's tied output head: token_embd created again with
    /// TENSOR_DUPLICATED). Sources never set it.
    bool duplicate = false;
    bool operator==(const weight_tensor &) const = default;
};

/// Weights split by placement, as llama.cpp places them (src/llama-model.cpp load_tensors):
/// the token embedding always stays on the CPU, each block goes where -ngl puts it, the output head
/// (and output norm) is the "extra" layer offloaded first. A tied output (no output.weight tensor)
/// reuses token_embd and is counted once, in token_embd.
struct model_weights {
    weight_group token_embd;            ///< token embedding (and position embeddings when present)
    weight_group output;                ///< output norm + output head; 0 params when tied
    std::vector<weight_group> layers;   ///< per counted block, length n_layer
    weight_group other;                 ///< tensors of no block that are not the embedding or output
                                        ///< (rope tables, vision tower when bundled)
    weight_group vision;                ///< subset of `other`: vision/audio tower and projector tensors bundled in
                                        ///< a safetensors checkpoint, also reported apart from the text model
    weight_group mtp;                   ///< MTP / NextN prediction blocks: reported apart and NOT in the totals,
                                        ///< since llama.cpp 5b4ebc5 does not load them (measured: qwen35-9b-mtp1's
                                        ///< model buffer lacks blk.32) and published parameter counts exclude them
    /// Every tensor of a GGUF source, in file order (shard by shard); empty for every other source (config.json,
    /// catalog, safetensors: no GGUF types to place). The groups above are sums over these.
    std::vector<weight_tensor> tensors;
    /// GGUF: bytes of tensors llama.cpp does not load (skipped MTP/NextN tensors) lying between tensors it loads in
    /// one file. With mmap the CPU_Mapped buffer is the file range from the first loaded tensor to the end of the
    /// last (llama_model_loader::get_mapping_range, src/llama-model-loader.cpp), so they count there; a no-mmap
    /// load allocates only the loaded tensors. Measured: DeepSeek-V3.2 and GLM-5 (the MTP block's exp_probs_b is
    /// loaded, the block's other tensors before it are not): 50,805,760 B at 512 tokens, both releases.
    uint64_t mmap_hole_bytes = 0;
    /// GGUF: the part of `output` that llama.cpp creates with an MTP / NextN block it loads but does not run (GLM's
    /// and DeepSeek-V3.2's blk.N.exp_probs_b, arch flag mtp_probs_b), bytes per MTP block (index il - n_layer). It is
    /// in the block's buffer, so it sits on the device the -ts split gives that block (measured: glm-dsa-f9 with
    /// -ts 3,1,1,1 on 4 simulated CUDA GPUs, its 256 B on CUDA2, not with the output layer on CUDA3).
    std::vector<uint64_t> output_in_mtp_blocks;
    bool exact = false;                 ///< bytes read from a file (GGUF/safetensors) rather than estimated
    std::string format;                 ///< weight format label: "gguf", "bf16", "q4_k_m", "given", ...

    /// Sum of n_params over token_embd + output + layers + other (mtp excluded).
    uint64_t total_params() const;
    /// Sum of bytes over token_embd + output + layers + other (mtp excluded).
    uint64_t total_bytes() const;
    /// Sum of expert_params over the layers (MoE routed experts).
    uint64_t expert_params() const;
    bool operator==(const model_weights &) const = default;
};

/// The most blocks (n_layer) a model description may have. The deepest published decoders have 126 (Llama-3.1-405B)
/// to 160 layers; a config or GGUF claiming more than 4096 is damaged or hostile, and every plan costs time linear in
/// the count. Readers refuse more: "key 'num_hidden_layers': 200000 exceeds the limit 4096".
inline constexpr uint32_t max_n_layer = 4096;

/// The checkpoint's quantization, from config.json's quantization_config (or a runtime's --quantization): what the
/// serving runtimes (vLLM, SGLang) create per linear layer (src/runtimes/common/quant.cpp). method "" = unquantized.
/// DeepSeek-V3: {fp8, block 128x128}; gpt-oss: {mxfp4, ignore [model.layers.*.self_attn, ...]}.
struct weight_quant {
    std::string method;          ///< vLLM's name: "fp8", "mxfp4", "nvfp4", "gptq", "awq", "compressed-tensors"; "" none
    std::string label;           ///< weights.format label: "fp8-block128", "mxfp4", "nvfp4", "gptq-int4", ...
    uint32_t bits = 0;           ///< bits per quantized weight
    uint32_t group_size = 0;     ///< GPTQ/AWQ/compressed-tensors group (128); NVFP4 16; MXFP4 32; 0 per channel
    uint32_t block_n = 0, block_k = 0; ///< fp8 weight_block_size; 0 = per-tensor (or per-channel: per_channel)
    bool per_channel = false;    ///< compressed-tensors fp8 strategy "channel": one fp32 scale per output row
    bool static_input_scale = false; ///< fp8 activation_scheme "static": an fp32 input_scale per linear
    bool zero_point = false;     ///< GPTQ/AWQ qzeros; compressed-tensors asymmetric (symmetric: false)
    bool experts_only = false;   ///< MXFP4 in vLLM/SGLang: only the routed experts are quantized
    std::string expert_method;   ///< the routed experts' own format when it differs ("mxfp4": DeepSeek-V4's
                                 ///< expert_dtype fp4 beside fp8 blocks); "" = method
    bool lm_head = false;        ///< the LM head is quantized too (GPTQ lm_head, compressed-tensors without it ignored)
    std::vector<std::string> ignore; ///< modules_to_not_convert / ignore / ignored_layers, as written
    /// Set by a weight format asked for (--weights fp8: apply_weight_format), not read from a quantization_config: the
    /// launch line must ask the runtime for it (vLLM's and SGLang's --quantization fp8 quantizes at load) or name the
    /// quantized checkpoint it needs.
    bool requested = false;
    bool operator==(const weight_quant &) const = default;
};

/// A vision encoder bundled with a language model (config.json `vision_config`; absent for text-only checkpoints).
/// Serving runtimes load it with the language model and profile it at startup (vLLM's encoder budget,
/// docs/rules/vllm-overhead.md §4). Widths are elements; `max_tokens_per_image` is the language-model tokens one image
/// of the largest size becomes (0 when the config does not say: the runtime names its assumption).
/// Qwen3.5-27B: depth 27, hidden 1152, intermediate 4304, patch 16, spatial merge 2, out_hidden 5120.
struct vision_tower {
    uint32_t depth = 0;              ///< encoder blocks (depth / num_hidden_layers); 0 = no vision tower
    uint32_t hidden = 0;             ///< hidden_size
    uint32_t intermediate = 0;       ///< intermediate_size (the MLP width)
    uint32_t n_head = 0;             ///< num_heads / num_attention_heads
    uint32_t patch = 0;              ///< patch_size, pixels
    uint32_t merge = 1;              ///< patches merged into one language token per side (spatial_merge_size,
                                     ///< pooling_kernel_size): one token = merge x merge patches
    uint32_t temporal_patch = 1;     ///< temporal_patch_size (video frames per patch); 1 for images-only towers
    uint32_t out_hidden = 0;         ///< width the merger projects to (out_hidden_size; 0 = the language model's n_embd)
    uint32_t max_tokens_per_image = 0; ///< the config's own figure (vision_soft_tokens_per_image,
                                       ///< default_output_length, (image_size / patch / merge)^2); 0 = not stated
    /// Parameters of the tower and its merger, estimated from the widths: depth x (4 h^2 + 2 h i) + the merger
    /// (merge^2 h)^2 + merge^2 h x out_hidden. An estimate (biases, norms and position tables left out).
    uint64_t n_params() const;
    bool present() const { return depth > 0 && hidden > 0; }
    bool operator==(const vision_tower &) const = default;
};

/// What the model's llama.cpp architecture does that neither a GGUF key nor a config.json key states, and that a
/// runtime reads: one typed field per fact, each citing the llama.cpp source it reproduces (v0.5.0 and 5b4ebc5
/// unless said). Set once by the sources from the architecture table's row of model_desc::gguf_architecture
/// (src/sources/arch_table.cpp, set_arch_facts); all false / 0 when kvfit knows no row for the model (an unknown
/// architecture, a renamed config.json), so a runtime never looks an architecture up by name.
/// Example: Qwen3.5-9B {attn_gate, rs_rollback}; Gemma 4 {tied_output_first, h_nextn_rows}; Llama 4 {n_chunk_fixed 8192}.
struct arch_facts {
    /// The attention's Q projection also emits a per-element output gate, projected together with Q and split after:
    /// Qcur_full = wq x cur reshaped [2 x n_embd_head, n_head, T], Q and gate views of it (models/qwen3next.cpp,
    /// qwen35.cpp, qwen35moe.cpp, qwen4exp.cpp build_layer_attn), so Qcur_full stays live through the attention.
    bool attn_gate = false;
    /// One output-gate logit per head, sigmoid(g_proj(attn_norm)) [n_embd -> n_head] applied after the attention:
    /// models/step35.cpp build_lora_mm(wqkv_gate, cur) after build_attn, so attn_norm stays live under the scores.
    bool head_gate = false;
    /// The graph keeps every ubatch row through the last layer and exposes it as h_nextn, selecting the output rows
    /// after it (get_rows on the last layer only with embeddings_nextn_masked, off by default: models/gemma4.cpp,
    /// step35.cpp); the output stage holds h_nextn [n_embd, T] besides result_norm.
    bool h_nextn_rows = false;
    /// A tied output is created (TENSOR_DUPLICATED token_embd) BEFORE token_embd: llama_model_loader::create_tensor
    /// finds no token_embd in the context yet and makes a second tensor, counted twice without mmap / in no_alloc
    /// mode (models/gemma4.cpp, gemma3n.cpp load_arch_tensors).
    bool tied_output_first = false;
    /// The architecture uses no sliding window: its models/<arch>.cpp loads no LLM_KV_ATTENTION_SLIDING_WINDOW and
    /// its converter writes none (llama, qwen2, qwen2moe, qwen3, qwen3moe, mistral3; phi3 reads it and turns it off,
    /// "Phi SWA is currently disabled"), so a window a config.json states is full attention under llama.cpp
    /// (llamacpp_adapt_model); vLLM and SGLang use it.
    bool no_window = false;
    /// The recurrent state keeps n_rs_seq extra snapshots per sequence for draft rollback: llm_arch_supports_rs_rollback
    /// (src/llama-arch.cpp:1112-1127: qwen35, qwen35moe, qwen4exp, deepseek4, nemotron_h(_moe), lfm2(moe), kimi-k3,
    /// bailingmoe3); clamped to 0 elsewhere (llama-context.cpp:105-110).
    bool rs_rollback = false;
    /// Chunked-attention chunk, tokens, that the loader hard-codes whatever the file says (models/llama4.cpp
    /// load_arch_hparams: n_swa = 8192; conversion/llama4.py writes no chunk size); 0 = none.
    uint32_t n_chunk_fixed = 0;
    /// rope_freqs.weight is created by the full-attention blocks only, the first of them holding it and the others a
    /// duplicate (models/gemma4.cpp:92-97 `if (!hparams.is_swa(i))`, both releases); otherwise by every block that
    /// uses it, block 0 holding it (rope_freqs_blocks).
    bool rope_freqs_full = false;
    bool operator==(const arch_facts &) const = default;
};

/// The model description. Per-layer vectors all have length n_layer; layer index `il` is explicit in every
/// query. MTP / NextN prediction layers are not part of n_layer (llama.cpp does not cache them).
struct model_desc {
    // --- identity -------------------------------------------------------------------------------
    std::string name;           ///< display name, e.g. "Qwen3.5-9B"
    std::string architecture;   ///< HF model_type or GGUF general.architecture, e.g. "qwen3_5_text", "qwen35"
    /// transformers' model class, config.json's architectures[0] ("LlamaForCausalLM", "Qwen3NextForCausalLM"), which
    /// vLLM and SGLang key their per-model choices on (hf_config.architectures[0]); "" for a GGUF or a config without it
    std::string hf_architecture;
    std::string source;         ///< where it came from: "catalog", a file path, "hf:org/name"
    /// GGUF general.architecture of the family ("qwen35" for HF "qwen3_5_text"), from the architecture table;
    /// empty when unknown. Equals `architecture` for GGUF sources. Ollama keys its per-family rules on it.
    std::string gguf_architecture;
    /// What that architecture does in llama.cpp beyond its keys (above); default when gguf_architecture has no row.
    arch_facts arch;

    // --- model-level scalars ---------------------------------------------------------------------
    uint32_t n_layer = 0;       ///< counted blocks (num_hidden_layers / block_count, MTP excluded)
    uint32_t n_embd = 0;        ///< hidden size
    uint32_t n_vocab = 0;       ///< vocabulary size (logits width)
    uint64_t n_ctx_train = 0;   ///< max_position_embeddings / context_length, tokens
    /// A config.json's rope_scaling (or rope_parameters; transformers v5 may nest one per layer type), one entry each:
    /// rope_type ("yarn", "linear", "dynamic", "llama3", "longrope", ...; "" when absent), factor (0 when absent, -1
    /// when present but not a number: null, a string), original_max_position_embeddings (the entry's own, else the
    /// config's top-level one, as vLLM's patch_rope_parameters copies it; 0 when neither). vLLM derives its longest and
    /// default --max-model-len from them (vllm_derived_max_model_len); llama.cpp and the GGUF converter do not.
    struct rope_scaling_entry {
        std::string type;
        double factor = 0;
        uint64_t original_ctx = 0;
        bool original_in_entry = false; ///< the entry itself names original_max_position_embeddings (SGLang reads it)
        bool operator==(const rope_scaling_entry &) const = default;
    };
    std::vector<rope_scaling_entry> rope_scaling;
    uint64_t original_ctx_top = 0; ///< the config's top-level original_max_position_embeddings (Phi-3 longrope), 0 = none
    uint32_t n_swa = 0;         ///< sliding-window length in tokens (swa layers), 0 when none
    uint32_t n_chunk = 0;       ///< chunked-attention chunk in tokens (chunked layers), 0 when none
    uint32_t n_layer_mtp = 0;   ///< MTP / NextN blocks the runtime loads besides n_layer: a GGUF's blocks past n_layer
                                ///< (nextn_predict_layers); llama.cpp's -ngl counts them and -ts splits them. From a
                                ///< config.json: n_layer_mtp_apart where llama.cpp's converter folds them into block_count
                                ///< by default (arch_row nextn_folded: GLM-4.5/5, DeepSeek-V3.2, Qwen3.5, MiMo, Step,
                                ///< Nemotron-H MoE), else 0
    uint32_t n_layer_mtp_apart = 0; ///< MTP / NextN layers of a config.json checkpoint (num_nextn_predict_layers,
                                    ///< mtp_num_hidden_layers): reported apart (weights.mtp), never placed
    bool tied_embeddings = false; ///< output head shares the token embedding
    uint32_t n_pos_per_embd = 1; ///< positions per token in the graph's inp_pos: 4 with M-RoPE (Qwen2-VL,
                                 ///< Qwen3-VL, Qwen3.5: t/h/w/extra sections), else 1. llama_hparams::n_pos_per_embd
                                 ///< (llama.cpp src/llama-hparams.cpp); sizes inp_pos in the compute buffer
    /// Graph features the llama.cpp compute model sizes tensors with (0 = absent; read from GGUF keys):
    uint32_t n_embd_inp = 0;  ///< width of the input embedding inp_embd when wider than n_embd: llama_hparams::n_embd_inp,
                              ///< n_embd * (1 + n_deepstack_layers) (Qwen3-VL deepstack)
    uint32_t moe_latent = 0;  ///< routed experts run in a latent of this width (moe_latent_size, Nemotron-3-Super)
    uint32_t n_hc = 0;        ///< hyper-connection copies of the residual stream (hyper_connection.count)
    uint32_t n_embd_ple = 0;  ///< per-layer-embedding input width (embedding_length_per_layer_input)
    /// HF `dtype` / `torch_dtype` ("bfloat16", "float16", "float32"); empty when the source does not say.
    /// vLLM's `--dtype auto` and `--kv-cache-dtype auto` resolve to it (serving runtimes only).
    std::string dtype;

    /// The checkpoint's quantization_config (method "" when none): serving runtimes size the weights from it.
    weight_quant quant;
    /// What the per-block parameter counts include, so a serving runtime can split them per linear layer
    /// (src/runtimes/common/quant.cpp): biases, gates, sinks (fp32 in vLLM), router biases. From the HF config.
    struct param_parts {
        bool qkv_bias = false, o_bias = false; ///< attention projection biases (attention_bias)
        bool attn_gate = false;                ///< q_proj doubled by an output gate (Qwen3-Next, Qwen3.5)
        bool sinks = false;                    ///< one sink per query head (gpt-oss), fp32 in vLLM
        bool router_bias = false;              ///< router Linear bias (gpt-oss)
        bool score_bias = false;               ///< e_score_correction_bias per expert, fp32 (DeepSeek noaux_tc)
        bool expert_bias = false;              ///< routed experts' biases (gpt-oss)
        bool operator==(const param_parts &) const = default;
    } parts;

    // --- per-layer shape (length n_layer) ----------------------------------------------------------
    /// The caches layer il keeps, in order (attention first, then indexer / compressed, then states); empty for a
    /// layer without memory. Runtimes size memory from these lists only.
    std::vector<std::vector<layer_cache>> caches;
    /// Attention shape of each layer (what the attention computes, not what it stores: an MLA layer has
    /// n_head heads of qk_nope + rope here and one 576-wide latent in `caches`; a KV-shared layer has heads here
    /// and no cache). 0 on layers without attention.
    std::vector<uint32_t> n_head;       ///< query heads (0 on layers without attention)
    std::vector<uint32_t> n_head_kv;    ///< KV heads (0 on layers without attention); 1 on MLA layers
    std::vector<uint32_t> head_dim_k;   ///< K width per head, elements (MLA: kv_lora_rank + n_rot_mla)
    std::vector<uint32_t> head_dim_v;   ///< V width per head, elements (MLA: kv_lora_rank)
    std::vector<uint32_t> n_ff;         ///< dense FFN width of each layer (0 for an MoE or MLP-less layer)
    bool ffn_gated = true;              ///< the dense FFN has a gate projection (SwiGLU/GeGLU: ffn_gate, ffn_up
                                        ///< and their product live together); false for a plain up/act/down MLP
                                        ///< (Nemotron-H relu^2). GGUF: an ffn_gate.weight tensor in a dense block

    // --- MLA (DeepSeek-V2/V3, kind == mla) ---------------------------------------------------------
    uint32_t kv_lora_rank = 0;  ///< compressed KV latent width (HF kv_lora_rank)
    uint32_t n_rot_mla = 0;     ///< decoupled RoPE key width (HF qk_rope_head_dim)
    uint32_t q_lora_rank = 0;   ///< 0 when queries are not compressed
    uint32_t head_dim_qk_nope = 0; ///< HF qk_nope_head_dim (MLA only)
    uint32_t head_dim_v_mla = 0;   ///< HF v_head_dim (MLA only; the V width the attention outputs)
    uint32_t indexer_n_head = 0;   ///< DSA / MSA lightning-indexer query heads (GGUF attention.indexer.head_count,
                                   ///< HF index_n_heads); 0 without an indexer. Sizes the indexer's graph tensors
    uint32_t indexer_top_k = 0;    ///< tokens (DSA) or blocks (MSA) the indexer selects (attention.indexer.top_k,
                                   ///< HF index_topk); 0 without an indexer

    // --- recurrent layers (kind == recurrent) -----------------------------------------------------
    recurrent_kind rec_kind = recurrent_kind::none;
    uint32_t ssm_d_conv = 0;    ///< conv kernel (ssm.conv_kernel, linear_conv_kernel_dim, L_cache)
    uint32_t ssm_d_inner = 0;   ///< inner width (ssm.inner_size; GDN: H_v * D_v)
    uint32_t ssm_d_state = 0;   ///< state size (ssm.state_size; GDN: D_k)
    uint32_t ssm_n_group = 0;   ///< groups (ssm.group_count; GDN: H_k)
    uint32_t ssm_n_head = 0;    ///< SSM heads (ssm.time_step_rank; Mamba2 heads, GDN: H_v)
    uint32_t ssm_head_dim = 0;  ///< per-head width of the SSM (Mamba2 head_dim, GDN: D_v)
    uint32_t rwkv_head_size = 0;///< RWKV wkv head size
    /// HF `mamba_ssm_dtype` ("float32" in Qwen3.5 configs): the dtype of the SSM / delta-rule state in vLLM and
    /// SGLang; empty = the model dtype. llama.cpp ignores it (always f32).
    std::string ssm_dtype;
    uint32_t ssm_chunk_size = 0;///< HF `chunk_size` / `mamba_chunk_size` of Mamba2 kernels, tokens; 0 when absent

    // --- MoE -------------------------------------------------------------------------------------
    uint32_t n_expert = 0;          ///< routed experts per MoE layer (0 for dense)
    uint32_t n_expert_used = 0;     ///< experts routed per token
    uint32_t n_expert_shared = 0;   ///< shared experts per MoE layer
    uint32_t n_ff_exp = 0;          ///< width of one routed expert
    uint32_t n_ff_shexp = 0;        ///< width of the shared expert(s) together
    std::vector<uint8_t> is_moe;    ///< per layer: 1 when the FFN is a routed MoE
    uint32_t n_expert_latent = 0;   ///< latent width the routed experts work in (GGUF expert_latent_length, HF
                                    ///< routed_expert_hidden_size / moe_latent_size; llama_hparams::n_expert_latent), 0: none
    uint32_t attn_res_block = 0;    ///< attention-residual block size (GGUF attn_res.block_size, Kimi-K3: every layer
                                    ///< mixes the outputs of the blocks so far), 0: plain residual stream
    /// Layer-graph dimensions no other field holds, by their GGUF key without the architecture prefix, as llama.cpp's
    /// loader reads them; both sources fill the same keys. They enter the shape key of recorded compute graphs
    /// (llamacpp_graph_key, src/runtimes/llamacpp/graph_replay.h), so a sibling that differs only in one of them is
    /// not replayed with another model's graph. The keys per architecture: graph_dim_keys in src/sources/gguf_model.cpp
    /// (DeepSeek-V4: attention.q_lora_rank, attention.output_group_count, attention.output_lora_rank,
    /// attention.indexer.key_length, hash_layer_count; config.json: src/sources/hf_layout.cpp dsv4()).
    std::map<std::string, uint32_t> graph_dims;

    // --- weights ---------------------------------------------------------------------------------
    model_weights weights;      ///< parameters (and bytes when exact) by placement
    /// The bundled vision encoder (config.json vision_config); !present() for text-only checkpoints. Its weights are
    /// not in `weights` (llama.cpp loads it from a separate mmproj file); serving runtimes add them (vllm, sglang).
    vision_tower vision;

    // --- queries (explicit layer index; no default) ----------------------------------------------
    /// The attention type of layer `il` from its caches: mla if it keeps a latent, else full / swa / chunked by its
    /// attention cache, else recurrent if it keeps a state, else none.
    layer_kind kind_of(uint32_t il) const;
    /// True when layer `il` keeps cells that depend on the context (any cache but the states).
    bool has_kv(uint32_t il) const;
    /// True when layer `il`'s attention cache is capped by a window (window or chunked).
    bool is_swa(uint32_t il) const;
    /// True when layer `il` keeps a fixed recurrent state (conv_state or ssm_state).
    bool is_recurrent(uint32_t il) const;
    /// The attention cache of layer `il` (full, window, chunked or latent), nullptr when it has none.
    const layer_cache * attention_cache(uint32_t il) const;
    /// K elements per cell of cache `ic` of layer `il` (caches[il][ic].width_k()).
    uint64_t n_embd_k(uint32_t il, size_t ic) const { return caches.at(il).at(ic).width_k(); }
    /// V elements per cell of cache `ic` of layer `il`; 0 without a V cache.
    uint64_t n_embd_v(uint32_t il, size_t ic) const { return caches.at(il).at(ic).width_v(); }
    /// K elements per token of layer il's attention cache: n_head_kv * head_dim_k (MLA: the 576-wide latent);
    /// 0 without one. Matches llama_hparams::n_embd_k_gqa (llama.cpp src/llama-hparams.cpp).
    uint32_t n_embd_k_gqa(uint32_t il) const;
    /// V elements per token of layer il's attention cache; 0 without one and for an MLA latent (no V cache).
    uint32_t n_embd_v_gqa(uint32_t il) const;
    /// Conv-state elements per sequence per recurrent layer (llama_hparams::n_embd_r):
    /// gated_deltanet/mamba2: (d_conv - 1) * (d_inner + 2 * n_group * d_state);
    /// mamba1: (d_conv - 1) * d_inner; short_conv: n_embd * (d_conv - 1);
    /// rwkv: token-shift 2 * n_embd; kda: 3 * (d_conv - 1) * ssm_n_head * ssm_head_dim.
    /// Example Qwen3.5-9B: 3 * (4096 + 2*16*128) = 24576.
    uint64_t n_embd_r() const;
    /// Recurrent-state elements per sequence per recurrent layer (llama_hparams::n_embd_s):
    /// gated_deltanet/mamba2/mamba1: d_state * d_inner; short_conv: 0; rwkv: n_embd * rwkv_head_size;
    /// kda: ssm_head_dim^2 * ssm_n_head (Kimi-Linear-48B: 128 * 128 * 32 = 524288); lightning: the same
    /// (MiniMax-M1: 128 * 128 * 64 = 1048576).
    /// Example Qwen3.5-9B: 128 * 4096 = 524288.
    uint64_t n_embd_s() const;

    /// Number of layers of kind k.
    uint32_t count(layer_kind k) const;
    /// Total parameter count (weights.total_params()).
    uint64_t n_params() const { return weights.total_params(); }

    /// Checks invariants: vectors of length n_layer; every attention-like cache with heads and widths > 0 (at most
    /// 65536 each), a window > 0 on window / chunked caches, a ratio >= 1; states with a width > 0 and a recurrent
    /// kind. Throws kvfit::error "<source>: <what>" on the first violation.
    /// Throws kvfit::error "<source>: <what>" on the first violation.
    void validate() const;

    bool operator==(const model_desc &) const = default;
};

/// Resize every per-layer vector of `m` to m.n_layer (new entries zero, no caches).
void resize_layers(model_desc & m);

/// The seeds' hypothetical "if all layers were full attention": every layer keeps the caches of the model's
/// reference layer (the first with a full or latent cache, else the first with any attention cache), window and
/// chunked caches become full, compressed caches and states are dropped; heads copied, weights kept, name suffixed
/// " (all full attention)". A model without an attention cache is returned unchanged.
/// Example Qwen3.5-9B: 32 full layers of 4 KV heads x 256 (131,072 B per token in f16, 4x the model's 32,768).
model_desc all_full_attention_variant(const model_desc & m);

/// Give layer `il` the fixed states of m.rec_kind: a conv_state of n_embd_r() and an ssm_state of n_embd_s()
/// elements (each only when non-zero), after its other caches. The recurrent dims must be set first.
void add_recurrent_state(model_desc & m, uint32_t il);

/// The blocks that create a rope_freqs.weight when the model has one, one flag per layer (n_layer): every block, or
/// with arch.rope_freqs_full the full-attention blocks only, a KV-shared block (no cache) counting as full when its
/// head width is the full layers' (models/gemma4.cpp:92-97). The first flagged block holds the tensor; the others get
/// a duplicate in their own weight buffer (TENSOR_DUPLICATED: one copy per buffer, llama-model-loader.cpp).
std::vector<uint8_t> rope_freqs_blocks(const model_desc & m);

/// The layers of `m` by kind, one line for reports: "32 layers: 8 full attention, 24 recurrent (gated_deltanet)";
/// window and chunk sizes in tokens ("sliding window (512 tokens)"), then the caches beside a layer's kind:
/// compressed caches by ratio (DeepSeek-V4 CSA/HCA: "; 30 with a compressed cache (1 cell per 4 tokens)") and indexer
/// keys (DSA, MSA). The text reports of llama.cpp and of a runtime without sections of its own print it.
std::string layer_summary(const model_desc & m);

} // namespace kvfit
