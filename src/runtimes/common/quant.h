#pragma once
// Weights as vLLM and SGLang create them on one tensor-parallel rank, linear layer by linear layer, from the model's
// shapes and its quantization (model_desc::quant). Rules: docs/rules/vllm-frontier.md §8 (create_weights of
// vllm/model_executor/layers/quantization/fp8.py, mxfp4.py, modelopt.py, gptq.py, awq.py, compressed_tensors_wNa16.py;
// vocab_parallel_embedding.py pad_vocab_size 64; deepseek_v2.py fused_qkv_a_proj disable_tp). Not public API.
#include "kvfit/model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvfit::detail {

/// Where the quantized experts' intermediate width is padded (mxfp4.py Mxfp4MoEMethod.create_weights).
struct quant_target {
    uint32_t mxfp4_pad = 64;      ///< CUDA 64, ROCm 128, FlashInfer MXFP4 (Blackwell) 256 (hidden padded too)
    bool pad_hidden = false;      ///< FlashInfer: hidden size padded to mxfp4_pad as well
};

/// Bytes one TP rank holds of layers [first, first + n), plus the embedding when `first_stage` and the LM head (and
/// final norm) when `last_stage` (the tied embedding again when pp > 1 on the last stage).
struct rank_weight_bytes {
    uint64_t total = 0;
    uint64_t experts = 0, attention = 0, dense = 0, embed = 0, other = 0; ///< its parts (other: norms, router, biases)
};

/// The checkpoint's bytes on one rank of `tp`. Linear layers the ignore list names stay in the model dtype.
rank_weight_bytes quant_rank_weights(const model_desc & m, uint32_t tp, uint32_t first, uint32_t n, bool first_stage,
                                     bool last_stage, bool pp_tied_copy, const quant_target & t);

/// True when module `name` ("model.layers.3.self_attn.q_proj") is named by one entry of `ignore`: "re:<regex>" matched
/// in full, else a glob ('*' any text) matching the name or a dotted prefix of it, or an entry without "model." matching
/// its dotted tail ("lm_head", "mlp.gate").
bool quant_ignored(const std::vector<std::string> & ignore, const std::string & name);

/// True when the model's weights are to be sized from model_desc::quant: not read from a file, and the format is the
/// quantization's label (default_weights) or a --weights / --quantization name of the same method.
bool quant_sized(const model_desc & m);

/// vLLM's MXFP4 MoE backend on a GPU of compute capability `cc`: FlashInfer (pad 256, hidden too) on Blackwell
/// (cc >= 10), else the Triton/Marlin path with the intermediate padded to 64.
quant_target vllm_quant_target(double cc);

/// Set the model's weight groups to the TP-1 bytes of its quantization (so totals and reports show the checkpoint),
/// weights.format to the label; returns a one-line note of what was assumed.
std::string apply_quant_weights(model_desc & m, const quant_target & t);

/// runtime_info::default_weights of vLLM and SGLang: the quantization_config's layout (apply_quant_weights) or the
/// config's dtype; a config stating no dtype is taken as bfloat16, and the warning says which and why.
void serving_default_weights(model_desc & m, std::vector<std::string> & warn);

} // namespace kvfit::detail
