// GGUF metadata -> model_desc. Keys are llama.cpp's LLM_KV_NAMES ("%s.block_count", "%s.attention.head_count_kv",
// ... in src/llama-arch.cpp) with %s = general.architecture; per-layer keys may be a scalar or an array of length
// block_count, as llama_model_loader::get_key_or_arr reads them. Layer kinds follow the architecture's row in
// arch_table.cpp (the table both sources share); weights are the tensor infos summed by placement (token_embd, blocks, output, other).
#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "sources/arch.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>

namespace kvfit {
namespace {

/// GGUF keys (without the architecture prefix) of layer-graph dimensions no model_desc field holds, per architecture:
/// they enter the shape key of recorded compute graphs (model_desc::graph_dims). deepseek4: models/deepseek4.cpp
/// (q LoRA, grouped output LoRA, indexer key width, hash-routed layers, the rotated tail of each head:
/// rope.dimension_count, n_rot, which the q/kv rope views and the compressor's rope take); qwen4exp: models/qwen4exp.cpp
/// (hyper-connection low rank, indexer key width, per-layer n-gram embeddings).
const std::pair<std::string_view, std::vector<const char *>> graph_dim_keys[] = {
    {"deepseek4", {"attention.q_lora_rank", "attention.output_group_count", "attention.output_lora_rank",
                   "attention.indexer.key_length", "hash_layer_count", "rope.dimension_count"}},
    {"qwen4exp", {"hyper_connection.low_rank", "attention.indexer.key_length", "ple.ngram_size", "ple.heads_per_ngram",
                  "ple.conv_kernel"}},
    // the router: group-limited routing (llm_graph_context::build_moe_ffn, src/llama-graph.cpp v0.5.0:2081-2105: with
    // n_expert_groups > 1 each token's experts come from its top n_group_used groups, fourteen more tensors per routed
    // layer) and the gating function (softmax or sigmoid: another op, and ggml-cuda's top-k MoE fusion takes either
    // differently); read by llama-model.cpp:1266-1267 for every architecture, written by the converter from n_group /
    // topk_group / scoring_func (DeepSeek-V3: 8 groups, 4 used, sigmoid; Kimi-K2.5: 1 group, sigmoid). Resolved as
    // the loader resolves them (where the keys are read, below).
    // expert_weights_norm too (build_moe_ffn normalises the chosen experts' weights, v0.5.0:2134-2147: three more
    // tensors), and whether expert_weights_scale scales them (a float: read below as expert_weights_scaled)
    {"deepseek2", {"expert_group_count", "expert_group_used_count", "expert_gating_func", "expert_weights_norm"}},
};

} // namespace

namespace {

using detail::gguf_layout;

/// Typed reads of "<arch>.<suffix>" keys with messages naming the file, key and offset.
struct gguf_keys {
    const gguf_file & f;
    std::string arch;

    const gguf_value * get(std::string_view suffix) const { return f.find(fmt::format("{}.{}", arch, suffix)); }

    [[noreturn]] void bad(const gguf_value & v, std::string_view suffix, std::string_view what) const {
        throw error::at_offset(f.path(), v.offset, fmt::format("key '{}.{}': {}", arch, suffix, what));
    }

    std::optional<uint64_t> uint(std::string_view suffix) const {
        const gguf_value * v = get(suffix);
        if (!v) return std::nullopt;
        const auto n = v->to_uint();
        if (!n) bad(*v, suffix, fmt::format("expected an unsigned integer, got {}", gguf_type_name(v->type)));
        return n;
    }
    uint32_t u32(std::string_view suffix, uint32_t fallback) const {
        const auto n = uint(suffix);
        if (n && *n > UINT32_MAX) bad(*get(suffix), suffix, fmt::format("value {} exceeds {}", *n, UINT32_MAX));
        return n ? uint32_t(*n) : fallback;
    }
    uint32_t required(std::string_view suffix) const {
        if (!get(suffix)) throw error::missing_key(f.path(), fmt::format("{}.{}", arch, suffix));
        return u32(suffix, 0);
    }
    /// Scalar or array of length n_block (get_key_or_arr); `fallback` per layer when absent. With `at_least`, a
    /// longer array is accepted and its first n_block entries read, as loaders that index it by layer do
    /// (deepseek4.cpp compress_ratios: >= block_count; glm-dsa.cpp indexer.types: n_layer() trunk entries).
    std::vector<uint32_t> per_layer(std::string_view suffix, uint32_t n_block, const std::vector<uint32_t> & fallback,
                                    bool at_least = false) const {
        const gguf_value * v = get(suffix);
        if (!v) return fallback;
        if (!v->is_array()) return std::vector<uint32_t>(n_block, u32(suffix, 0));
        if (at_least ? v->n < n_block : v->n != n_block) {
            bad(*v, suffix, fmt::format("array length {} {} {}", v->n, at_least ? "is shorter than the layer count" : "differs from block_count", n_block));
        }
        std::vector<uint32_t> out(n_block);
        for (uint32_t il = 0; il < n_block; ++il) {
            const auto e = v->at(il, f.path()).to_uint();
            if (!e || *e > UINT32_MAX) bad(*v, suffix, fmt::format("element {} is not an unsigned 32-bit integer", il));
            out[il] = uint32_t(*e);
        }
        return out;
    }
};

/// Sliding-window layers: the pattern key (array per layer or scalar period) or the row's period.
/// set_swa_pattern(p) (llama.cpp src/llama-hparams.cpp): swa iff p == 0 || il % p < p - 1.
std::vector<bool> swa_layers(const gguf_keys & k, const detail::arch_row & row, uint32_t n_block) {
    std::vector<bool> swa(n_block, false);
    const gguf_value * v = k.get("attention.sliding_window_pattern");
    if (v && v->is_array()) {
        if (v->n != n_block) k.bad(*v, "attention.sliding_window_pattern", fmt::format("array length {} differs from block_count {}", v->n, n_block));
        for (uint32_t il = 0; il < n_block; ++il) swa[il] = v->at(il, k.f.path()).to_uint().value_or(0) != 0;
        return swa;
    }
    const uint32_t p = v ? k.u32("attention.sliding_window_pattern", row.period) : row.period;
    if (row.layout == gguf_layout::all_swa) return std::vector<bool>(n_block, true); // deepseek4: set_swa_pattern(0)
    const bool dense_first = row.layout == gguf_layout::swa_dense_first;
    if (row.layout != gguf_layout::swa_period && row.layout != gguf_layout::chunked_period && !dense_first && !v) return swa;
    for (uint32_t il = 0; il < n_block; ++il) swa[il] = detail::swa_pattern_layer(il, p, dense_first);
    return swa;
}

/// Kind of each block from the row's layout (per-layer arrays already read).
std::vector<layer_kind> layer_kinds(const gguf_keys & k, const detail::arch_row & row, const model_desc & m,
                                    uint32_t n_block, const std::vector<uint32_t> & kv, const std::vector<uint32_t> & ff) {
    std::vector<layer_kind> kind(n_block, layer_kind::none);
    const uint32_t interval = k.u32("full_attention_interval", row.period);
    if (row.layout == gguf_layout::interval && interval == 0) {
        k.bad(*k.get("full_attention_interval"), "full_attention_interval", "interval 0");
    }
    const auto swa = swa_layers(k, row, n_block);
    for (uint32_t il = 0; il < n_block; ++il) {
        const layer_kind attn = kv[il] == 0 ? layer_kind::none
                              : !swa[il] ? layer_kind::full
                              : row.layout == gguf_layout::chunked_period ? layer_kind::chunked : layer_kind::swa;
        switch (row.layout) {
        case gguf_layout::attention:
        case gguf_layout::swa_period:
        case gguf_layout::swa_dense_first:
        case gguf_layout::chunked_period:
        case gguf_layout::parallel_hybrid: kind[il] = attn; break;
        case gguf_layout::interval:        kind[il] = detail::interval_attention(il, interval) ? attn : layer_kind::recurrent; break;
        case gguf_layout::kv_or_recurrent: kind[il] = kv[il] > 0 ? attn : layer_kind::recurrent; break;
        case gguf_layout::nemotron_h:      kind[il] = kv[il] > 0 ? attn : ff[il] == 0 ? layer_kind::recurrent : layer_kind::none; break;
        case gguf_layout::all_recurrent:   kind[il] = layer_kind::recurrent; break;
        case gguf_layout::all_swa:         kind[il] = layer_kind::swa; break;
        }
        if ((kind[il] == layer_kind::swa || kind[il] == layer_kind::chunked) && (m.n_swa == 0 && m.n_chunk == 0)) {
            kind[il] = layer_kind::full; // window 0: llama.cpp sets swa_type NONE
        }
        if (row.kv_from_start > 0 && il >= row.kv_from_start && kind[il] != layer_kind::recurrent) kind[il] = layer_kind::none;
    }
    return kind;
}

void read_recurrent(const gguf_keys & k, const detail::arch_row & row, model_desc & m, uint32_t n_head0) {
    m.rec_kind = row.rec;
    if (row.rec == recurrent_kind::short_conv) {
        m.ssm_d_conv = k.u32("shortconv.l_cache", 0);
    } else if (row.rec == recurrent_kind::rwkv) {
        m.rwkv_head_size = k.u32("wkv.head_size", 0);
    } else if (row.rec == recurrent_kind::kda) { // llama-hparams.cpp n_embd_r/n_embd_s with n_embd_head_kda
        m.ssm_d_conv = k.u32("ssm.conv_kernel", 0);
        m.ssm_head_dim = k.u32("kda.head_dim", 0);
        m.ssm_n_head = n_head0;
        m.ssm_d_inner = m.ssm_n_head * m.ssm_head_dim;
    } else if (row.rec == recurrent_kind::lightning) { // models/minimax-01.cpp: n_embd_head_la = n_embd_head_k
        m.ssm_n_head = n_head0;
        m.ssm_head_dim = k.u32("attention.key_length", n_head0 > 0 ? m.n_embd / n_head0 : 0);
        m.ssm_d_inner = m.ssm_n_head * m.ssm_head_dim;
    } else {
        m.ssm_d_conv = k.u32("ssm.conv_kernel", 0);
        m.ssm_d_inner = k.u32("ssm.inner_size", 0);
        m.ssm_d_state = k.u32("ssm.state_size", 0);
        m.ssm_n_group = k.u32("ssm.group_count", 0);
        m.ssm_n_head = k.u32("ssm.time_step_rank", 0);
        m.ssm_head_dim = m.ssm_n_head > 0 ? m.ssm_d_inner / m.ssm_n_head : 0;
    }
}

// "blk.12.attn_q.weight" -> 12; nullopt for other names.
std::optional<uint32_t> block_index(std::string_view name) {
    if (name.substr(0, 4) != "blk.") return std::nullopt;
    uint64_t il = 0;
    size_t i = 4;
    for (; i < name.size() && i < 14 && name[i] >= '0' && name[i] <= '9'; ++i) il = il * 10 + uint64_t(name[i] - '0');
    if (i == 4 || i >= name.size() || name[i] != '.' || il > UINT32_MAX) return std::nullopt;
    return uint32_t(il);
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Placement as llama.cpp's loader sees it: input layer (token and position embeddings, the per-layer token
// embedding of gemma3n), blocks il < n_layer, output layer (output and output_norm), everything else.
// A NextN block's tensors that step35's loader creates with mtp_flags (TENSOR_SKIP while load_mtp is off, the
// default): attn_norm, create_tensor_qkv's q/k/v (fused or not, with biases), attn_output, ffn_norm and the nextn
// eh_proj/enorm/hnorm (llama.cpp models/step35.cpp load_block_mtp, v0.5.0 and 5b4ebc5). Every other tensor of the
// block is created TENSOR_NOT_REQUIRED only and loads: q/k norms, the head-wise gate, the FFN or experts and the
// shared head (measured: Step-3.7-Flash-MTP, 3 blocks, model buffer +27,511,808 B per block at 512 tokens).
bool mtp_tensor_skipped(std::string_view name) {
    static constexpr std::string_view skipped[] = {
        ".attn_norm.weight", ".attn_qkv.weight", ".attn_qkv.bias", ".attn_q.weight", ".attn_k.weight",
        ".attn_v.weight", ".attn_q.bias", ".attn_k.bias", ".attn_v.bias", ".attn_output.weight", ".ffn_norm.weight",
        ".nextn.eh_proj.weight", ".nextn.enorm.weight", ".nextn.hnorm.weight"};
    for (const auto s : skipped) if (name.ends_with(s)) return true;
    return false;
}

void add_weights(model_desc & m, const std::vector<gguf_file> & shards, const detail::param_flags & flags) {
    auto & w = m.weights;
    w.layers.assign(m.n_layer, weight_group{});
    bool has_output = false;
    auto add = [](weight_group & g, const gguf_tensor_info & t, uint64_t bytes) {
        g.n_params += t.n_elements;
        g.bytes += bytes;
        if (t.name.find("_exps") != std::string_view::npos) {
            g.expert_params += t.n_elements;
            g.expert_bytes += bytes;
        }
    };
    w.tensors.clear();
    w.mmap_hole_bytes = 0;
    for (uint32_t file = 0; file < shards.size(); ++file) {
        const gguf_file & f = shards[file];
        uint64_t first = UINT64_MAX, last = 0, loaded_bytes = 0; // the mapped range of the loaded tensors
        auto loaded = [&](const gguf_tensor_info & t, uint64_t bytes) {
            first = std::min(first, t.offset);
            last = std::max(last, t.offset + bytes);
            loaded_bytes += bytes;
        };
        for (const auto & t : f.tensors()) {
            // A tensor takes its bytes padded to the file's alignment: the mapped file range holds the padding
            // (CPU_Mapped), and a no-mmap / no_alloc buffer pads each tensor to TENSOR_ALIGNMENT 32
            // (ggml_backend_cpu_buffer_type_get_alignment). gemma4's layer_output_scale [1] f32: 4 B -> 32 B.
            const uint64_t align = std::max<uint64_t>(32, f.alignment());
            const uint64_t bytes = (t.bytes + align - 1) / align * align;
            weight_group * g = &w.other;
            int32_t layer = weight_tensor::input;
            if (const auto il = block_index(t.name)) {
                g = *il < m.n_layer ? &w.layers[*il] : &w.mtp; // blocks past n_layer are NextN/MTP
                // loaded although its block is not (param_flags mtp_probs_b): with the tensors of no block
                // (the block's device: with the output layer, the blocks after the trunk; measured on a simulated
                // CUDA device, GLM-5's blk.78.exp_probs_b on CUDA0 with -ngl all)
                if (*il >= m.n_layer && flags.mtp_probs_b && t.name.find(".exp_probs_b.") != std::string_view::npos) {
                    g = &w.output;
                    const size_t k = *il - m.n_layer; // on its block's device (model_weights::output_in_mtp_blocks)
                    if (k < 64) {
                        if (w.output_in_mtp_blocks.size() <= k) w.output_in_mtp_blocks.resize(k + 1, 0);
                        w.output_in_mtp_blocks[k] += bytes;
                    }
                }
                // the NextN tensors llama.cpp loads anyway: with the output layer (the blocks after the trunk), and
                // not in weights.mtp, which holds what --spec-type draft-mtp adds (load_mtp)
                if (*il >= m.n_layer && flags.mtp_trunk_tensors && !mtp_tensor_skipped(t.name)) g = &w.output;
                layer = int32_t(std::min<uint32_t>(*il, INT32_MAX));
            } else if (starts_with(t.name, "token_embd_norm")) {
                // LFM2's output norm (LLM_TENSOR_OUTPUT_NORM_LFM2 = "token_embd_norm", an output-layer tensor)
                g = &w.output;
                layer = weight_tensor::output;
            } else if (starts_with(t.name, "token_embd") || starts_with(t.name, "position_embd") ||
                       starts_with(t.name, "per_layer_token_embd")) {
                g = &w.token_embd;
            } else if (starts_with(t.name, "output") || starts_with(t.name, "altup_proj") ||
                       starts_with(t.name, "altup_unembd_proj") || starts_with(t.name, "cls")) {
                // LLM_TENSOR_LAYER_OUTPUT (src/llama-arch.cpp LLM_TENSOR_INFOS): output, output_norm, the
                // hyper-connection head output_hc_* (DeepSeek-V4, Qwen3.8), output_res_score (Kimi-K3), altup (gemma3n)
                g = &w.output;
                layer = weight_tensor::output;
                has_output |= starts_with(t.name, "output.weight");
            } else if (starts_with(t.name, "rope_freqs")) {
                // LLM_TENSOR_LAYER_REPEATING without a block number: created for the first block that creates it
                // (block 0, or gemma4's first full-attention block: rope_freqs_blocks); the others are duplicates
                const std::vector<uint8_t> rf = rope_freqs_blocks(m);
                const auto first = std::find(rf.begin(), rf.end(), uint8_t(1));
                layer = first == rf.end() ? 0 : int32_t(first - rf.begin());
                if (size_t(layer) < w.layers.size()) g = &w.layers[size_t(layer)];
            }
            w.tensors.push_back({std::string(t.name), t.type, {t.ne[0], t.ne[1], t.ne[2], t.ne[3]}, t.offset, t.bytes,
                                 file, layer});
            add(*g, t, bytes);
            if (g != &w.mtp) loaded(t, bytes); // the tensors the totals count are the ones llama.cpp loads
        }
        if (last > first && last - first > loaded_bytes) w.mmap_hole_bytes += last - first - loaded_bytes;
    }
    w.exact = true;
    w.format = "gguf";
    m.tied_embeddings = !has_output;
}

uint32_t vocab_size(const gguf_file & f, const gguf_keys & k) {
    if (const gguf_value * v = f.find("tokenizer.ggml.tokens"); v && v->is_array()) return uint32_t(std::min<uint64_t>(v->n, UINT32_MAX));
    if (const auto n = k.uint("vocab_size")) return uint32_t(std::min<uint64_t>(*n, UINT32_MAX));
    if (const gguf_tensor_info * t = f.find_tensor("token_embd.weight")) return uint32_t(std::min<uint64_t>(t->ne[1], UINT32_MAX));
    return 0;
}

} // namespace

model_desc model_from_gguf(const std::vector<gguf_file> & shards, warnings & warn) {
    if (shards.empty()) throw error("gguf: no file given");
    const gguf_file & f = shards[0];
    const gguf_value * arch_v = f.find("general.architecture");
    if (!arch_v) throw error::missing_key(f.path(), "general.architecture");
    const auto arch = arch_v->to_string();
    if (!arch) throw error::at_offset(f.path(), arch_v->offset, "key 'general.architecture': expected a string");
    const gguf_keys k{f, std::string(*arch)};
    static const detail::arch_row generic{"", "", gguf_layout::attention, 0, 0, recurrent_kind::none, false, 0, {}, {}, "generic keys"};
    const detail::arch_row * row = detail::find_arch_gguf(*arch);
    if (!row) {
        // An architecture kvfit has no row for is read as attention layers only; a header whose keys or tensors name
        // layers that are not (an SSM / delta-rule state, RWKV, short convolutions, a sliding window, MLA, a DSA
        // indexer, an interleave of kinds) would then be planned as dense — refused by name instead (llama.cpp itself
        // refuses an architecture it does not know: llm_arch_from_string -> LLM_ARCH_UNKNOWN).
        static constexpr std::string_view markers[] = {".ssm.", ".wkv.", ".rwkv.", ".time_mix", ".token_shift", ".shortconv.",
                                                       ".attention.sliding_window", ".attention.kv_lora_rank",
                                                       ".attention.indexer", ".full_attention_interval", ".linear_attn",
                                                       ".attention.chunk", ".swa_"};
        static constexpr std::string_view tensor_markers[] = {"ssm_", "time_mix", "shortconv", "wkv", "indexer", "attn_kv_a"};
        const std::string prefix = std::string(*arch) + ".";
        for (const auto & kv : f.kvs()) {
            if (!kv.key.starts_with(prefix)) continue;
            const std::string_view rest = kv.key.substr(prefix.size() - 1);
            for (const auto mk : markers) {
                if (rest.find(mk) != std::string_view::npos) {
                    throw error(fmt::format("{}: unknown architecture '{}' with key '{}': its layers are not all attention, "
                                            "and kvfit does not know which hold what (a refusal, not a plan as dense "
                                            "attention; docs/adding-an-architecture.md)", f.path(), *arch, kv.key));
                }
            }
        }
        for (const auto & t : f.tensors()) {
            for (const auto mk : tensor_markers) {
                if (t.name.find(mk) != std::string_view::npos) {
                    throw error(fmt::format("{}: unknown architecture '{}' with tensor '{}': its layers are not all "
                                            "attention, and kvfit does not know which hold what (a refusal, not a plan as "
                                            "dense attention; docs/adding-an-architecture.md)", f.path(), *arch, t.name));
                }
            }
        }
        warn.push_back(fmt::format("{}: unknown architecture '{}': read with the generic keys, attention layers only",
                                   f.path(), *arch));
        row = &generic;
    }

    model_desc m;
    m.architecture = k.arch;
    m.gguf_architecture = k.arch;
    detail::set_arch_facts(m);
    m.source = f.path();
    const gguf_value * name = f.find("general.name");
    m.name = name && name->to_string() ? std::string(*name->to_string()) : std::filesystem::path(f.path()).stem().string();
    const uint32_t n_block = k.required("block_count");
    if (n_block == 0 || n_block > max_n_layer) k.bad(*k.get("block_count"), "block_count", fmt::format("value {} out of range 1-{}", n_block, max_n_layer));
    m.n_layer_mtp = k.u32("nextn_predict_layers", 0);
    if (m.n_layer_mtp >= n_block) {
        k.bad(*k.get("nextn_predict_layers"), "nextn_predict_layers", fmt::format("{} leaves no layer of {}", m.n_layer_mtp, n_block));
    }
    m.n_layer = n_block - m.n_layer_mtp; // NextN/MTP blocks sit at the end and hold no cache
    m.n_embd = k.required("embedding_length");
    m.n_ctx_train = k.uint("context_length").value_or(0);
    m.n_vocab = vocab_size(f, k);
    // M-RoPE: llama.cpp gives 4 positions per token to the MROPE/IMROPE rope types, which are exactly the models
    // whose rope.dimension_sections has non-zero t and h sections (use_mrope(), src/llama-hparams.cpp; qwen2vl,
    // qwen3vl, qwen35 and qwen35moe always carry the key). Example qwen35: [11, 11, 10, 0] -> 4.
    if (const gguf_value * sec = k.get("rope.dimension_sections"); sec && sec->is_array() && sec->n >= 2) {
        const bool t = sec->at(0, f.path()).to_uint().value_or(0) > 0;
        const bool h = sec->at(1, f.path()).to_uint().value_or(0) > 0;
        m.n_pos_per_embd = t && h ? 4 : 1;
    }
    // Compute-graph features (llama.cpp src/llama-hparams.cpp n_embd_inp(): n_embd * (1 + n_deepstack_layers);
    // moe_latent_size: src/models/nemotron-h.cpp; hyper_connection.count and embedding_length_per_layer_input)
    if (const uint32_t ds = k.u32("n_deepstack_layers", 0); ds > 0) m.n_embd_inp = m.n_embd * (1 + ds);
    m.moe_latent = k.u32("moe_latent_size", 0);
    m.n_hc = k.u32("hyper_connection.count", 0);
    m.n_embd_ple = k.u32("embedding_length_per_layer_input", 0);
    m.n_swa = row->layout == gguf_layout::chunked_period ? 0 : k.u32("attention.sliding_window", row->window);
    m.n_chunk = row->layout == gguf_layout::chunked_period && k.u32("attention.sliding_window", 1) != 0 ? row->facts.n_chunk_fixed : 0;

    const auto n_head = k.per_layer("attention.head_count", n_block, std::vector<uint32_t>(n_block, 0));
    const auto n_head_kv = k.per_layer("attention.head_count_kv", n_block, n_head);
    const auto n_ff = k.per_layer("feed_forward_length", n_block, std::vector<uint32_t>(n_block, 0));
    const uint32_t head0 = n_head.empty() ? 0 : *std::max_element(n_head.begin(), n_head.end());
    // load_hparams (src/llama-model.cpp): head widths default to n_embd / n_head(0); window layers read their own
    // (key_length_swa / value_length_swa, n_embd_head_k(il) = is_swa(il) ? n_embd_head_k_swa : n_embd_head_k_full)
    const uint32_t dim_k = k.u32("attention.key_length", head0 > 0 ? m.n_embd / head0 : 0);
    const uint32_t dim_v = k.u32("attention.value_length", head0 > 0 ? m.n_embd / head0 : 0);
    const uint32_t dim_k_swa = k.u32("attention.key_length_swa", dim_k);
    const uint32_t dim_v_swa = k.u32("attention.value_length_swa", dim_v);
    auto kinds = layer_kinds(k, *row, m, n_block, n_head_kv, n_ff);
    // An attention architecture whose every layer has 0 heads is not a model llama.cpp can run: refuse it rather
    // than plan layers without cache and 0 parameters (llama.cpp divides n_embd by n_head(0) in load_hparams).
    const bool needs_attention = row->layout == gguf_layout::attention || row->layout == gguf_layout::swa_period ||
                                 row->layout == gguf_layout::swa_dense_first || row->layout == gguf_layout::chunked_period;
    if (needs_attention && head0 == 0) {
        const gguf_value * v = k.get("attention.head_count");
        if (!v) throw error::missing_key(f.path(), k.arch + ".attention.head_count");
        k.bad(*v, "attention.head_count", "0 on every layer: no attention layer in an attention architecture");
    }
    // Gemma 4 (models/gemma4.cpp): the last shared_kv_layers layers read an earlier layer's KV
    const uint32_t n_shared_kv = k.u32("attention.shared_kv_layers", 0);
    if (n_shared_kv >= m.n_layer && n_shared_kv > 0) {
        k.bad(*k.get("attention.shared_kv_layers"), "attention.shared_kv_layers", fmt::format("{} leaves no layer of {} with a cache", n_shared_kv, m.n_layer));
    }
    // DSA / lightning indexer keys (models/deepseek32.cpp, glm-dsa.cpp, qwen4exp.cpp): on each attention layer that
    // attention.indexer.types marks full (all of them without the key); DeepSeek-V4 by compress ratio instead.
    const uint32_t index_dim = k.u32("attention.indexer.key_length", 0);
    m.indexer_n_head = k.u32("attention.indexer.head_count", 0);
    m.indexer_top_k = k.u32("attention.indexer.top_k", 0);
    auto index_full = k.per_layer("attention.indexer.types", m.n_layer, std::vector<uint32_t>(m.n_layer, 1), true);
    if (row->flags.index_sparse) { // MSA: no indexer on the leading dense blocks (filter_idx, llama-model.cpp:2300)
        const uint32_t dense = k.u32("leading_dense_block_count", 0);
        for (uint32_t il = 0; il < m.n_layer; ++il) index_full[il] = il >= dense;
    }
    const auto ratios = k.per_layer("attention.compress_ratios", n_block, std::vector<uint32_t>(n_block, 0), true);
    // Qwen3.8-Flash-Next's per-layer embedding conv (llama_hparams::ple_conv_state, llama-hparams.cpp:268-275): on the
    // layers ple.layers lists, (ple.conv_kernel - 1) x ple.ngram_size x hyper_connection.count x n_embd f32 values
    const uint64_t ple_conv = k.u32("ple.conv_kernel", 0) > 1 && k.u32("ple.heads_per_ngram", 0) > 0
                                  ? uint64_t(k.u32("ple.conv_kernel", 0) - 1) * k.u32("ple.ngram_size", 0) *
                                        std::max<uint32_t>(1, k.u32("hyper_connection.count", 1)) * m.n_embd
                                  : 0;
    std::vector<uint32_t> ple_layers;
    if (k.get("ple.ngram_size") && (ple_conv == 0 || !k.get("ple.layers"))) {
        warn.push_back(fmt::format("{}: per-layer n-gram embeddings (ple.ngram_size) without ple.conv_kernel, "
                                   "ple.heads_per_ngram or ple.layers: their conv state (llama_hparams::ple_conv_state) "
                                   "is not counted", f.path()));
    }
    if (const gguf_value * v = k.get("ple.layers"); v && ple_conv > 0) {
        for (uint64_t i = 0; i < (v->is_array() ? v->n : 1); ++i) {
            const auto e = v->is_array() ? v->at(i, f.path()).to_uint() : v->to_uint();
            if (!e || *e >= m.n_layer) k.bad(*v, "ple.layers", fmt::format("entry {} is not a layer index below {}", i, m.n_layer));
            ple_layers.push_back(uint32_t(*e));
        }
    }

    const bool mla = row->mla && k.get("attention.key_length_mla") != nullptr;
    if (mla) {
        m.kv_lora_rank = k.required("attention.kv_lora_rank");
        m.n_rot_mla = k.required("rope.dimension_count");
        m.q_lora_rank = k.u32("attention.q_lora_rank", 0);
        const uint32_t k_mla = k.u32("attention.key_length_mla", 0);
        m.head_dim_qk_nope = k_mla > m.n_rot_mla ? k_mla - m.n_rot_mla : 0;
        m.head_dim_v_mla = k.u32("attention.value_length_mla", 0);
    }
    resize_layers(m);
    // the layer graph's own dimensions (model_desc::graph_dims), as llama_model::load_hparams reads them
    for (const auto & [arch, keys] : graph_dim_keys) {
        if (m.gguf_architecture != arch) continue;
        for (const char * key : keys) m.graph_dims[key] = k.u32(key, 0);
    }
    // deepseek2 without expert_gating_func (DeepSeek-V2/V2.5 GGUFs): the loader picks softmax, sigmoid for GLM-4.7
    // Lite (47 or 48 blocks, 154,880 tokens): llama_model_deepseek2::load_arch_hparams, src/models/deepseek2.cpp
    // v0.5.0:22-31
    if (auto it = m.graph_dims.find("expert_gating_func"); it != m.graph_dims.end() && it->second == 0) {
        it->second = (n_block == 47 || n_block == 48) && m.n_vocab == 154880 ? 2 : 1;
    }
    // the routing weights scaled (build_moe_ffn: ggml_scale where expert_weights_scale is neither 0 nor 1,
    // v0.5.0:2149-2151; deepseek2.cpp reads the key optionally, 0 when absent)
    if (m.graph_dims.count("expert_gating_func") != 0) {
        const gguf_value * sc = k.get("expert_weights_scale");
        const float scale = sc != nullptr ? float(sc->to_float().value_or(0)) : 0.0f;
        m.graph_dims["expert_weights_scaled"] = scale != 0.0f && scale != 1.0f ? 1 : 0;
    }
    // one group or none is ungrouped routing (build_moe_ffn's n_expert_groups > 1): both 0, as a config's n_group 1
    if (auto it = m.graph_dims.find("expert_group_count"); it != m.graph_dims.end() && it->second <= 1) {
        it->second = 0;
        m.graph_dims["expert_group_used_count"] = 0;
    }
    if (std::count(kinds.begin(), kinds.end(), layer_kind::recurrent) > 0 || row->layout == gguf_layout::parallel_hybrid) read_recurrent(k, *row, m, n_head.empty() ? 0 : n_head[0]);
    using mem = detail::layer_store::mem;
    std::vector<detail::layer_store> layers(m.n_layer);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        m.n_head[il] = n_head[il];
        m.n_ff[il] = n_ff[il];
        m.head_dim_k[il] = dim_k;
        m.head_dim_v[il] = dim_v;
        const bool attn = kinds[il] != layer_kind::none && kinds[il] != layer_kind::recurrent;
        m.n_head_kv[il] = attn ? n_head_kv[il] : 0;
        detail::layer_store & l = layers[il];
        if (row->layout == gguf_layout::all_swa) { // deepseek4: one K-only head of key_length per layer
            m.n_head_kv[il] = 1;
            l.what = mem::dsv4;
            l.compress = ratios[il];
            continue;
        }
        if (kinds[il] == layer_kind::swa) m.head_dim_k[il] = dim_k_swa, m.head_dim_v[il] = dim_v_swa;
        l.what = !attn ? (kinds[il] == layer_kind::recurrent ? mem::recurrent : mem::none)
               : mla ? mem::mla : mem::attention;
        l.attn = kinds[il] == layer_kind::swa ? cache_kind::window : kinds[il] == layer_kind::chunked ? cache_kind::chunked
               : cache_kind::full;
        l.kv_shared = attn && detail::kv_shared_layer(il, m.n_layer, n_shared_kv);
        l.indexer = index_dim > 0 && index_full[il] != 0; // DSA; qwen4exp's hybrid-idx memory
        // falcon-h1: attention and a Mamba2 mixer side by side, both filters true on every layer (create_memory)
        l.parallel_state = row->layout == gguf_layout::parallel_hybrid;
        if (std::find(ple_layers.begin(), ple_layers.end(), il) != ple_layers.end()) l.ple_state = uint32_t(ple_conv);
    }
    detail::build_layer_caches(m, layers, index_dim);

    m.n_expert = k.u32("expert_count", 0);
    m.n_expert_used = k.u32("expert_used_count", 0);
    m.n_expert_shared = k.u32("expert_shared_count", 0);
    m.n_ff_exp = k.u32("expert_feed_forward_length", 0);
    m.n_ff_shexp = k.u32("expert_shared_feed_forward_length", 0);
    m.n_expert_latent = k.u32("expert_latent_length", 0);
    m.attn_res_block = k.u32("attn_res.block_size", 0);
    add_weights(m, shards, row->flags);
    // Shapes the compute-buffer model needs that no key states: the routed expert width when
    // expert_feed_forward_length is absent (granitehybrid: ffn_down_exps [n_ff_exp, n_embd, n_expert]) and
    // whether the dense FFN has a gate (nemotron_h: ffn_up + relu^2 + ffn_down only).
    bool dense_ffn = false, gate = false;
    for (const auto & f : shards) {
        for (const auto & t : f.tensors()) {
            const auto il = block_index(t.name);
            if (!il || *il >= m.n_layer) continue;
            const std::string_view n = t.name;
            if (m.n_ff_exp == 0 && n.ends_with(".ffn_down_exps.weight")) m.n_ff_exp = uint32_t(t.ne[0]);
            dense_ffn |= n.ends_with(".ffn_up.weight");
            gate |= n.ends_with(".ffn_gate.weight");
        }
    }
    if (dense_ffn && !gate) m.ffn_gated = false;
    // An MoE block keeps its dense width when it also runs a dense MLP beside the experts (an ffn_up.weight in
    // the block: gemma4's shared MLP, models/gemma4.cpp); otherwise n_ff is 0 on MoE layers.
    std::vector<uint8_t> dense_up(m.n_layer, 0);
    for (const auto & f : shards) {
        for (const auto & t : f.tensors()) {
            const auto il = block_index(t.name);
            if (il && *il < m.n_layer && std::string_view(t.name).ends_with(".ffn_up.weight")) dense_up[*il] = 1;
        }
    }
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        m.is_moe[il] = m.weights.layers[il].expert_params > 0;
        if (m.is_moe[il] && !dense_up[il]) m.n_ff[il] = 0;
    }
    m.validate();
    return m;
}

model_desc model_from_gguf(const std::string & path, warnings & warn) {
    return model_from_gguf(gguf_open_shards(path), warn);
}

} // namespace kvfit
