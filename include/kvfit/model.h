#pragma once
/// @file model.h
/// The model description: the one struct every source (catalog, config.json, GGUF, safetensors, remote)
/// builds and every runtime policy reads. It holds shapes only — no file format, no runtime setting.
///
/// Modelled on llama_hparams (llama.cpp src/llama-hparams.h): scalars for what is the same on every layer,
/// vectors of length n_layer for per-layer facts, and tiny const queries with an explicit layer index.

#include <cstdint>
#include <string>
#include <vector>

namespace kvfit {

/// How a layer keeps memory across tokens.
/// - full:      attention over the whole context; K and V grow with n_ctx.
/// - swa:       sliding-window attention; the cache is capped near n_swa tokens.
/// - chunked:   chunked local attention (Llama 4); capped near n_chunk tokens.
/// - mla:       multi-head latent attention (DeepSeek-V2/V3): one latent of kv_lora_rank + n_rot_mla values
///              per token, stored as K only in llama.cpp.
/// - recurrent: a fixed-size state per sequence (Gated DeltaNet, Mamba, short convolution, RWKV).
/// - none:      no cache (attention removed, MLP-only block, or KV shared with an earlier layer).
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
enum class recurrent_kind : uint8_t { none, gated_deltanet, mamba2, mamba1, short_conv, rwkv };

/// Name of a recurrent kind: "none", "gated_deltanet", "mamba2", "mamba1", "short_conv", "rwkv".
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

/// The model description. Per-layer vectors all have length n_layer; layer index `il` is explicit in every
/// query. MTP / NextN prediction layers are not part of n_layer (llama.cpp does not cache them).
struct model_desc {
    // --- identity -------------------------------------------------------------------------------
    std::string name;           ///< display name, e.g. "Qwen3.5-9B"
    std::string architecture;   ///< HF model_type or GGUF general.architecture, e.g. "qwen3_5_text", "qwen35"
    std::string source;         ///< where it came from: "catalog", a file path, "hf:org/name"
    /// GGUF general.architecture of the family ("qwen35" for HF "qwen3_5_text"), from the architecture table;
    /// empty when unknown. Equals `architecture` for GGUF sources. Ollama keys its per-family rules on it.
    std::string gguf_architecture;

    // --- model-level scalars ---------------------------------------------------------------------
    uint32_t n_layer = 0;       ///< counted blocks (num_hidden_layers / block_count, MTP excluded)
    uint32_t n_embd = 0;        ///< hidden size
    uint32_t n_vocab = 0;       ///< vocabulary size (logits width)
    uint64_t n_ctx_train = 0;   ///< max_position_embeddings / context_length, tokens
    uint32_t n_swa = 0;         ///< sliding-window length in tokens (swa layers), 0 when none
    uint32_t n_chunk = 0;       ///< chunked-attention chunk in tokens (chunked layers), 0 when none
    uint32_t n_layer_mtp = 0;   ///< MTP / NextN layers present in the checkpoint, not counted in n_layer
    bool tied_embeddings = false; ///< output head shares the token embedding
    uint32_t n_pos_per_embd = 1; ///< positions per token in the graph's inp_pos: 4 with M-RoPE (Qwen2-VL,
                                 ///< Qwen3-VL, Qwen3.5: t/h/w/extra sections), else 1. llama_hparams::n_pos_per_embd
                                 ///< (llama.cpp src/llama-hparams.cpp); sizes inp_pos in the compute buffer
    /// HF `dtype` / `torch_dtype` ("bfloat16", "float16", "float32"); empty when the source does not say.
    /// vLLM's `--dtype auto` and `--kv-cache-dtype auto` resolve to it (serving runtimes only).
    std::string dtype;

    // --- per-layer attention shape (length n_layer) ---------------------------------------------
    std::vector<layer_kind> kind;       ///< memory kind of each layer
    std::vector<uint32_t> n_head;       ///< query heads (0 on layers without attention)
    std::vector<uint32_t> n_head_kv;    ///< KV heads (0 on layers without KV); 1 on MLA layers
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

    // --- weights ---------------------------------------------------------------------------------
    model_weights weights;      ///< parameters (and bytes when exact) by placement

    // --- queries (explicit layer index; no default) ----------------------------------------------
    /// True when layer `il` holds a K/V cache that grows with context (full, swa, chunked, mla).
    bool has_kv(uint32_t il) const;
    /// True when layer `il` is capped by a window (swa or chunked).
    bool is_swa(uint32_t il) const;
    /// True when layer `il` holds a recurrent state.
    bool is_recurrent(uint32_t il) const;
    /// K elements per token of layer il: head_dim_k[il] * n_head_kv[il]; 0 without KV.
    /// Matches llama_hparams::n_embd_k_gqa (llama.cpp src/llama-hparams.cpp).
    uint32_t n_embd_k_gqa(uint32_t il) const;
    /// V elements per token of layer il: head_dim_v[il] * n_head_kv[il]; 0 without KV.
    /// Matches llama_hparams::n_embd_v_gqa. For MLA this is kv_lora_rank (used by the older V-ful layout).
    uint32_t n_embd_v_gqa(uint32_t il) const;
    /// Conv-state elements per sequence per recurrent layer (llama_hparams::n_embd_r):
    /// gated_deltanet/mamba2: (d_conv - 1) * (d_inner + 2 * n_group * d_state);
    /// mamba1: (d_conv - 1) * d_inner; short_conv: n_embd * (d_conv - 1);
    /// rwkv: token-shift 2 * n_embd. Example Qwen3.5-9B: 3 * (4096 + 2*16*128) = 24576.
    uint64_t n_embd_r() const;
    /// Recurrent-state elements per sequence per recurrent layer (llama_hparams::n_embd_s):
    /// gated_deltanet/mamba2/mamba1: d_state * d_inner; short_conv: 0; rwkv: n_embd * rwkv_head_size.
    /// Example Qwen3.5-9B: 128 * 4096 = 524288.
    uint64_t n_embd_s() const;

    /// Number of layers of kind k.
    uint32_t count(layer_kind k) const;
    /// Total parameter count (weights.total_params()).
    uint64_t n_params() const { return weights.total_params(); }

    /// Checks invariants: vectors of length n_layer, heads and dims > 0 where the kind needs them,
    /// n_swa > 0 when a swa layer exists, recurrent dims set when a recurrent layer exists.
    /// Throws kvfit::error "<source>: <what>" on the first violation.
    void validate() const;

    bool operator==(const model_desc &) const = default;
};

/// Resize every per-layer vector of `m` to m.n_layer (new entries zero / layer_kind::none).
void resize_layers(model_desc & m);

} // namespace kvfit
