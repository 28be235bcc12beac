// Helpers for safetensors tests: a small Llama-shaped checkpoint (config.json + tensors named as the HF
// checkpoints name them), plain or quantized the way GPTQ and fp8 block-wise checkpoints store it, and a
// gpt-oss-shaped MXFP4 checkpoint. Used by test_safetensors.cpp and test_remote.cpp.
#pragma once

#include "kvfit/safetensors_writer.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace kvfit::test {

/// One tensor to write.
struct st_entry {
    std::string name;
    st_dtype dtype;
    std::vector<uint64_t> shape;
};

/// How the linear layers of a fixture are stored.
enum class st_linear {
    bf16,      ///< <name>.weight BF16 [out, in]
    gptq4,     ///< <name>.qweight I32 [in/8, out], .qzeros I32 [in/128, out/8], .scales F16 [in/128, out], .g_idx I32 [in]
    fp8_block, ///< <name>.weight F8_E4M3 [out, in], .weight_scale_inv F32 [ceil(out/128), ceil(in/128)]
};

/// A Llama shape small enough for tests, with widths that are multiples of 128 (GPTQ groups, fp8 blocks).
struct llama_shape {
    uint32_t n_layer = 2, n_embd = 256, n_head = 4, n_head_kv = 2, n_ff = 512, n_vocab = 1024;
};

inline std::string llama_config(const llama_shape & s, const std::string & quantization_config = "") {
    return fmt::format(R"({{"model_type": "llama", "num_hidden_layers": {}, "hidden_size": {}, "num_attention_heads": {},
  "num_key_value_heads": {}, "intermediate_size": {}, "vocab_size": {}, "max_position_embeddings": 4096,
  "tie_word_embeddings": false{}}})", s.n_layer, s.n_embd, s.n_head, s.n_head_kv, s.n_ff, s.n_vocab,
                       quantization_config.empty() ? "" : ", \"quantization_config\": " + quantization_config);
}

inline void add_linear(std::vector<st_entry> & out, const std::string & name, uint64_t n_out, uint64_t n_in, st_linear q) {
    switch (q) {
    case st_linear::bf16: out.push_back({name + ".weight", st_dtype::bf16, {n_out, n_in}}); break;
    case st_linear::gptq4:
        out.push_back({name + ".qweight", st_dtype::i32, {n_in / 8, n_out}});
        out.push_back({name + ".qzeros", st_dtype::i32, {n_in / 128, n_out / 8}});
        out.push_back({name + ".scales", st_dtype::f16, {n_in / 128, n_out}});
        out.push_back({name + ".g_idx", st_dtype::i32, {n_in}});
        break;
    case st_linear::fp8_block:
        out.push_back({name + ".weight", st_dtype::f8_e4m3, {n_out, n_in}});
        out.push_back({name + ".weight_scale_inv", st_dtype::f32, {(n_out + 127) / 128, (n_in + 127) / 128}});
        break;
    }
}

/// The tensors of a Llama checkpoint, in HF names (model.embed_tokens, model.layers.<il>.*, model.norm, lm_head).
inline std::vector<st_entry> llama_entries(const llama_shape & s, st_linear q) {
    std::vector<st_entry> out;
    const uint64_t hd = s.n_embd / s.n_head;
    out.push_back({"model.embed_tokens.weight", st_dtype::bf16, {s.n_vocab, s.n_embd}});
    for (uint32_t il = 0; il < s.n_layer; ++il) {
        const std::string p = fmt::format("model.layers.{}.", il);
        out.push_back({p + "input_layernorm.weight", st_dtype::bf16, {s.n_embd}});
        add_linear(out, p + "self_attn.q_proj", s.n_head * hd, s.n_embd, q);
        add_linear(out, p + "self_attn.k_proj", s.n_head_kv * hd, s.n_embd, q);
        add_linear(out, p + "self_attn.v_proj", s.n_head_kv * hd, s.n_embd, q);
        add_linear(out, p + "self_attn.o_proj", s.n_embd, s.n_head * hd, q);
        out.push_back({p + "post_attention_layernorm.weight", st_dtype::bf16, {s.n_embd}});
        add_linear(out, p + "mlp.gate_proj", s.n_ff, s.n_embd, q);
        add_linear(out, p + "mlp.up_proj", s.n_ff, s.n_embd, q);
        add_linear(out, p + "mlp.down_proj", s.n_embd, s.n_ff, q);
    }
    out.push_back({"model.norm.weight", st_dtype::bf16, {s.n_embd}});
    out.push_back({"lm_head.weight", st_dtype::bf16, {s.n_vocab, s.n_embd}});
    return out;
}

/// A gpt-oss-shaped checkpoint, 2 layers of 4 experts, experts in MXFP4 as openai/gpt-oss-20b stores them:
/// *_blocks U8 [n_expert, rows, in/32, 16] (two 4-bit values per byte) and *_scales U8 [n_expert, rows, in/32].
inline constexpr uint32_t k_oss_embd = 256, k_oss_ff = 256, k_oss_expert = 4, k_oss_head = 4, k_oss_kv = 2,
                          k_oss_hd = 64, k_oss_vocab = 1024;

inline std::string gpt_oss_config() {
    return fmt::format(R"({{"model_type": "gpt_oss", "num_hidden_layers": 2, "hidden_size": {}, "num_attention_heads": {},
  "num_key_value_heads": {}, "head_dim": {}, "intermediate_size": {}, "vocab_size": {}, "num_local_experts": {},
  "num_experts_per_tok": 2, "experts_per_token": 2, "sliding_window": 128, "attention_bias": true,
  "layer_types": ["sliding_attention", "full_attention"], "max_position_embeddings": 4096,
  "tie_word_embeddings": false, "quantization_config": {{"quant_method": "mxfp4"}}}})",
                       k_oss_embd, k_oss_head, k_oss_kv, k_oss_hd, k_oss_ff, k_oss_vocab, k_oss_expert);
}

inline std::vector<st_entry> gpt_oss_entries() {
    const uint64_t e = k_oss_embd, ff = k_oss_ff, x = k_oss_expert, q = k_oss_head * k_oss_hd, kv = k_oss_kv * k_oss_hd;
    std::vector<st_entry> out{{"model.embed_tokens.weight", st_dtype::bf16, {k_oss_vocab, e}}};
    for (int il = 0; il < 2; ++il) {
        const std::string p = fmt::format("model.layers.{}.", il);
        out.push_back({p + "input_layernorm.weight", st_dtype::bf16, {e}});
        out.push_back({p + "post_attention_layernorm.weight", st_dtype::bf16, {e}});
        for (auto [name, rows] : {std::pair{"q_proj", q}, {"k_proj", kv}, {"v_proj", kv}}) {
            out.push_back({p + "self_attn." + name + ".weight", st_dtype::bf16, {rows, e}});
            out.push_back({p + "self_attn." + name + ".bias", st_dtype::bf16, {rows}});
        }
        out.push_back({p + "self_attn.o_proj.weight", st_dtype::bf16, {e, q}});
        out.push_back({p + "self_attn.o_proj.bias", st_dtype::bf16, {e}});
        out.push_back({p + "self_attn.sinks", st_dtype::bf16, {k_oss_head}});
        out.push_back({p + "mlp.router.weight", st_dtype::bf16, {x, e}});
        out.push_back({p + "mlp.router.bias", st_dtype::bf16, {x}});
        out.push_back({p + "mlp.experts.gate_up_proj_blocks", st_dtype::u8, {x, 2 * ff, e / 32, 16}});
        out.push_back({p + "mlp.experts.gate_up_proj_scales", st_dtype::u8, {x, 2 * ff, e / 32}});
        out.push_back({p + "mlp.experts.gate_up_proj_bias", st_dtype::bf16, {x, 2 * ff}});
        out.push_back({p + "mlp.experts.down_proj_blocks", st_dtype::u8, {x, e, ff / 32, 16}});
        out.push_back({p + "mlp.experts.down_proj_scales", st_dtype::u8, {x, e, ff / 32}});
        out.push_back({p + "mlp.experts.down_proj_bias", st_dtype::bf16, {x, e}});
    }
    out.push_back({"model.norm.weight", st_dtype::bf16, {e}});
    out.push_back({"lm_head.weight", st_dtype::bf16, {k_oss_vocab, e}});
    return out;
}

/// A writer holding `entries[first, last)`.
inline safetensors_writer st_writer(const std::vector<st_entry> & entries, size_t first = 0, size_t last = SIZE_MAX) {
    safetensors_writer w;
    w.add_metadata("format", "pt");
    for (size_t i = first; i < entries.size() && i < last; ++i) w.add(entries[i].name, entries[i].dtype, entries[i].shape);
    return w;
}

/// Sum of the entries' bytes (n_elements * bits / 8).
inline uint64_t st_bytes(const std::vector<st_entry> & entries) {
    uint64_t b = 0;
    for (const auto & e : entries) {
        uint64_t n = 1;
        for (uint64_t d : e.shape) n *= d;
        b += n * st_dtype_bits(e.dtype) / 8;
    }
    return b;
}

/// model.safetensors.index.json for shards holding the given tensors: {"weight_map": {"tensor": "file", ...}}.
inline std::string st_index(const std::vector<std::pair<std::string, std::vector<st_entry>>> & shards) {
    std::string map;
    uint64_t total = 0;
    for (const auto & [file, entries] : shards) {
        for (const auto & e : entries) map += fmt::format("{}\"{}\": \"{}\"", map.empty() ? "" : ", ", e.name, file);
        total += st_bytes(entries);
    }
    return fmt::format(R"({{"metadata": {{"total_size": {}}}, "weight_map": {{{}}}}})", total, map);
}

} // namespace kvfit::test
