#pragma once
// Private to src/runtimes/llamacpp: the typed report sections of a llama.cpp plan (runtime.h plan_section; issue 26
// item 1), built from the native plan (llamacpp_plan) by plan.cpp, and the words of the planner's searches appended
// after them (runtime_info::search_sections). src/report renders them without naming llama.cpp.
#include "kvfit/llamacpp.h"

#include <cstdint>
#include <vector>

namespace kvfit::detail {

/// The figures plan.cpp computes beside the llamacpp_plan for the report and detail (docs/json.md): the seeds' table
/// and the per-token comparisons. Bytes; tokens for contexts.
struct llamacpp_report_figures {
    bool from_model = false;                 ///< no -c given: the context is the model's training context
    uint64_t kv_bytes_per_token_if_all_full = 0; ///< kv_bytes_per_token of all_full_attention_variant(m), the plan's types
    uint64_t kv_bytes_per_token_f16 = 0;     ///< the model's growing caches in f16
    uint64_t kv_bytes_per_token_q8_0 = 0;    ///< the same in q8_0
    struct context_row {
        uint64_t n_ctx = 0;                  ///< -c, tokens
        uint64_t kv_bytes = 0;               ///< all KV caches at that -c
        uint64_t kv_bytes_if_all_full = 0;   ///< the same for the all-full-attention variant
    };
    std::vector<context_row> contexts;       ///< the -c values given, else 8,192 / 32,768 / 131,072 / 262,144
};

/// The sections of a llama.cpp plan's text report (runtime_plan::sections, sections_complete): the model lines, the
/// KV per token (formula when every growing cache is one attention cache; compressed caches by ratio), the fixed
/// state per sequence, the table by -c, the weights and host model buffers, the projector / adapter / host RAM lines,
/// and with GPUs the fit: budget, the settings llama.cpp derives, backend, compute source, the device table,
/// speculative decoding, the offload and the verdict. `r` is the runtime_plan made from `p` (its devices, notes,
/// verdict and host_ram); `gpus` the machine's GPUs; `in` the flags as parsed.
std::vector<plan_section> llamacpp_sections(const model_desc & m, const llamacpp_inputs & in, const llamacpp_plan & p,
                                            const runtime_plan & r, const std::vector<device_spec> & gpus,
                                            const llamacpp_report_figures & f);

/// The words `--check` and charts use for a llama.cpp plan (runtime_plan::words): n_ctx as llama.cpp pads it, the
/// cache types and sequences; "margin" for the memory kept free; what llama.cpp does when a GPU is over.
plan_words llamacpp_words(const model_desc & m, const llamacpp_inputs & in, const llamacpp_plan & p,
                          const runtime_plan & r, const llamacpp_report_figures & f);

/// The largest weight size that fits the GPUs at a plan's context: every GPU's room after the margin plus its
/// weights (the target's and speculative decoding's), plus the token embedding (it stays in host memory). 0 when the
/// GPUs are over even without weights. Bytes.
uint64_t llamacpp_weights_bytes_that_fit(const model_desc & m, const runtime_plan & r);

/// runtime_info::search_sections of llama.cpp: with GPUs, the largest -c per -ctk/-ctv (max_context), what would fit
/// instead when the plan does not (the -c values, the -ngl and --n-cpu-moe alternatives, the largest weights) and
/// the launch, as one untitled section of rows indented under the fit section. Nothing without GPUs.
void llamacpp_search_sections(const model_desc & m, runtime_plan & p);

} // namespace kvfit::detail
