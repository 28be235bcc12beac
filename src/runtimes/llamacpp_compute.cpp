// Compute-buffer model of llama.cpp's scheduler (first version, RULES.md terms only; refined from
// the measured rows of results.csv).
#include "kvfit/runtime.h"

#include <algorithm>

namespace kvfit {

uint64_t llamacpp_compute_bytes(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c) {
    (void)s;
    const uint64_t ub = c.n_ubatch;
    uint32_t n_head = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) n_head = std::max(n_head, m.has_kv(il) ? m.n_head[il] : 0u);
    uint32_t n_ff = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) n_ff = std::max(n_ff, m.n_ff[il]);
    // logits of every ubatch token (result_output, f32) next to the last FFN activation.
    const uint64_t logits = ub * (uint64_t(m.n_vocab) + n_ff) * 4;
    // attention: f16 mask (FA) or f32 scores of every head plus the mask (no FA)
    const uint64_t attn = c.flash_attn ? c.n_ctx_seq * ub * 2 : c.n_ctx_seq * ub * (4ull * n_head + 4);
    return std::max(logits, attn + ub * m.n_embd * 4 * 4);
}

} // namespace kvfit
