#pragma once
/// @file sources.h
/// Sources: bytes -> model description. Each source knows its file format and nothing about runtimes.
/// Every loader throws kvfit::error with a one-line "where: what" message on bad input and appends
/// non-fatal notes (assumptions it had to make) to `warnings`.

#include "kvfit/model.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

/// Diagnostics a loader could not turn into an error: assumptions made, unknown architectures.
using warnings = std::vector<std::string>;

// --- Hugging Face config.json (src/sources/hf_config.cpp) ----------------------------------------------

/// Build a model description from the text of a Hugging Face config.json. `where` names the file in messages.
/// The language model's keys are read at the top level or in a wrapper (text_config, language_config, llm_config,
/// thinker_config). The layout comes from the keys in a documented order (src/sources/hf_layout.cpp: per-layer
/// lists, compress_ratios, full_attention_interval, MLA/DSA keys, windows, KV sharing, per-type heads); the row of
/// src/sources/arch_table.cpp named by `architectures` or model_type adds only what no key says. Example,
/// Qwen3-Next-80B-A3B (full_attention_interval 4): il 0-2 recurrent, il 3 full, ...
/// MTP layers (num_nextn_predict_layers, mtp_num_hidden_layers, MiniMax num_mtp_modules) are not counted:
/// n_layer_mtp_apart records them and weights.mtp estimates them, outside the totals and never placed by -ngl.
/// Parameter counts per block are computed from the shapes, vision towers excluded (bytes stay 0: see
/// apply_weight_format). Llama-3.1-8B: 8,030,261,248.
/// Warnings (never silent): an unknown architecture planned from its keys; a key whose name suggests memory that
/// kvfit neither reads nor knows to be harmless; an absent max_position_embeddings. Bare Infinity/NaN read as null.
/// Throws kvfit::error with one line: "<where>: not valid JSON: ...", "<where>: missing required key 'x'",
/// "<where>: key 'x': ..." for a wrong type, null, a value <= 0, over its limit (max_n_layer = 4096 layers, 16777216 for
/// widths), a per-layer list of the wrong length ("has 40 entries for num_hidden_layers 48"); and
/// "<where>: model_type 'x': <what>" for a layout kvfit cannot determine: a layer kind it does not know
/// ("layer_types[3] 'deepseek_sparse_attention': a layer kind kvfit does not know"), or keys that do not say
/// which layers slide or are chunked. Nested keys are spelled "text_config.x" or "block_configs[3].attention.x".
model_desc model_from_hf_config(std::string_view json_text, std::string_view where, warnings & warn);

/// The quantization_config of a config.json text (top level or text_config), as vLLM reads it
/// (vllm/model_executor/layers/quantization/<method>.py from_config): fp8 (weight_block_size, activation_scheme,
/// ignored_layers / modules_to_not_convert), mxfp4 (modules_to_not_convert; experts only), modelopt / modelopt_fp4
/// (quant_algo NVFP4 or FP8, group_size, exclude_modules), gptq (bits, group_size, lm_head), awq (bits / w_bit,
/// group_size / q_group_size, zero_point, modules_to_not_convert), compressed-tensors (the first config_groups
/// entry's weights: num_bits, type, strategy, group_size, symmetric, block_structure; ignore). None: method "".
/// A method kvfit does not size appends a warning and returns method "".
weight_quant weight_quant_from_config(std::string_view config_json, std::string_view where, warnings & warn);

/// vLLM's `--quantization` names (and --weights): fp8 (dynamic per-tensor), fp8-block (128x128), nvfp4 (group 16),
/// mxfp4 (experts only, group 32), gptq / awq / int4 (4 bits, group 128), int8 (gptq 8 bits). Empty method when
/// the name is not one of them.
weight_quant weight_quant_from_name(std::string_view name);

// --- GGUF (src/sources/gguf.cpp) ------------------------------------------------------------------------

/// Build a model description from a GGUF file (any shard of a split model: the others are found beside it).
/// Weights are exact (sum of tensor bytes by placement). Throws kvfit::error on malformed or hostile files.
model_desc model_from_gguf(const std::string & path, warnings & warn);

// --- catalog (src/sources/catalog.cpp, data/catalog/) ---------------------------------------------------

/// One built-in model: a published config.json embedded in the binary, or, for a model with no published
/// config.json, its llama.cpp GGUF metadata keys as JSON (gguf_keys).
struct catalog_entry {
    std::string_view name;        ///< catalog name, e.g. "Qwen3.5-9B"
    std::string_view hf_id;       ///< Hugging Face id, e.g. "Qwen/Qwen3.5-9B"
    std::string_view config_json; ///< the file's text: a config.json, or a JSON object of GGUF keys
    bool gguf_keys = false;       ///< config_json holds GGUF keys ("format": "gguf_keys" in index.json)
};

/// Build the model of a catalog entry: model_from_hf_config or model_from_gguf_keys; name = the entry's name,
/// source "catalog". Throws what those throw.
model_desc model_from_catalog(const catalog_entry & e, warnings & warn);

/// Build a model from a JSON object of GGUF metadata keys (`{"general.architecture": "qwen4exp",
/// "qwen4exp.block_count": 49, ...}`), read by model_from_gguf from an in-memory header with no tensors: strings,
/// booleans, integers (u32, u64 above 2^32, i32 when negative), floats (f32) and arrays of them. Keys starting with
/// "_" are notes and skipped. Weights are unknown (a warning says so). Throws kvfit::error "<where>: ...".
model_desc model_from_gguf_keys(std::string_view json_text, std::string_view where, warnings & warn);

/// The built-in catalog, in display order (data/catalog/index.json; data/catalog/README.md gives each file's
/// origin). The first entry (Qwen3.5-9B) is the default model. Built once; the views live as long as the program.
const std::vector<catalog_entry> & catalog();

/// The default model's catalog name ("Qwen3.5-9B").
std::string_view default_model_name();

/// Look up a catalog entry by name (case-insensitive; the HF id also matches). nullptr when absent.
const catalog_entry * find_catalog(std::string_view name);

/// Up to `n` catalog names closest to `name`, nearest first: entries whose name or HF id contains it (case-
/// insensitive), then by Levenshtein distance over lower-case names and HF ids, within a third of the longer
/// length; ties keep catalog order. Example: "qwen3-8" -> Qwen3-8B; "Mixtral-8x7B" -> Mixtral-8x7B-v0.1;
/// "lama-2-7b" -> Llama-2-7b-hf.
std::vector<std::string> closest_catalog_names(std::string_view name, size_t n);

// --- dispatch -------------------------------------------------------------------------------------------

/// Load a model named by catalog name, HF id in the catalog, config.json path, model directory holding a
/// config.json (with model.safetensors or model.safetensors.index.json beside it the weights are exact: see
/// apply_safetensors_weights in safetensors.h), .gguf path, "hf:org/name..." (model_from_hf in remote.h, options
/// from the environment: a hub cache snapshot first) or "ollama:NAME[:TAG]" (model_from_ollama in local.h). Throws
/// kvfit::error when nothing matches, with the closest catalog names and, for an org/name, the hf: spelling:
/// "Qwen/Qwen3-9B: no such file or catalog model (closest: Qwen3-8B, Qwen3.5-9B; a Hugging Face repository: hf:Qwen/Qwen3-9B)".
model_desc load_model(std::string_view spec, warnings & warn);

/// The display name of a model read from a file: the folder of a config.json ("models/Qwen3-8B/config.json"
/// -> "Qwen3-8B"), otherwise the file name without its extension ("llama31-8b.gguf" -> "llama31-8b"; a bare
/// "config.json" -> "config"). Lexical only: the file system is not consulted.
std::string model_name_from_path(std::string_view path);

// --- weights --------------------------------------------------------------------------------------------

/// A weight format for models whose file gives no exact bytes: average bits per weight over the whole model.
struct weight_format {
    std::string_view name;     ///< "f16", "q4_k_m", ...
    double bits_per_weight;    ///< average bits per weight, embedding and output included
    std::string_view source;   ///< where the figure comes from
};

/// The weight format assumed for a model whose source gives no weight bytes and no --weights was given:
/// q4_k_m, the most common GGUF quantization people run in llama.cpp.
inline constexpr const char * default_weight_format = "q4_k_m";

/// All known weight formats: f32, f16, bf16 (exact type sizes), q8_0, q6_k, q5_k_m, q5_k_s, q5_0, q4_k_m,
/// q4_k_s, q4_0, q3_k_m, q3_k_s, q2_k (average over a Llama-3-8B file: llama-quantize's QUANT_OPTIONS size in
/// GiB * 2^30 * 8 / 8,030,261,248 params; Q4_K_M 4.58 GiB -> 4.90 bpw), iq4_xs, iq4_nl, iq3_xxs, iq2_xxs (bpw as
/// QUANT_OPTIONS states it), mxfp4 (4.25: 17 bytes per 32 values). Each entry names its source.
const std::vector<weight_format> & weight_formats();

/// Set every weight group's bytes (and expert_bytes) to n_params * bits_per_weight / 8, rounded up per group,
/// and weights.format to the name (`format` is case-insensitive: "Q4_K_M" works). Leaves exact weights untouched unless `force`. Throws kvfit::error for an unknown format, listing
/// the known ones.
void apply_weight_format(model_desc & m, std::string_view format, bool force = false);

/// Spread a total weight size in bytes over the groups in proportion to their parameters (`--weights-size 6.6GB`);
/// the rounding remainder goes to token_embd so the groups add up to total_bytes exactly.
/// weights.format becomes "given". Throws kvfit::error when the model has no parameter count.
void apply_weight_size(model_desc & m, uint64_t total_bytes);

} // namespace kvfit
