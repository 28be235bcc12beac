// The per-architecture table of the GGUF source: how each llama.cpp architecture lays out its layer kinds.
// One row per architecture (src/sources/gguf_arch.cpp); the mapping code (gguf_model.cpp) reads only rows.
#pragma once

#include "kvfit/model.h"

#include <cstdint>
#include <string_view>

namespace kvfit::detail {

/// How the layer kinds of an architecture are laid out. `period` and `window` are the row's parameters.
/// - attention:       every layer with head_count_kv[il] > 0 is full attention, others none; a
///                    <arch>.attention.sliding_window_pattern array, when present, marks swa layers.
/// - swa_period:      set_swa_pattern(period) (llama.cpp src/llama-hparams.cpp): il % period < period - 1 is swa,
///                    the last of each period full. period 6: il 0-4 swa, il 5 full, il 6-10 swa, il 11 full ...
///                    A sliding_window_pattern key (array per layer, or scalar period) overrides the row; a
///                    window of 0 makes every layer full.
/// - chunked_period:  as swa_period, with chunked attention of `window` tokens (llama4: 3 chunked, 1 full).
/// - interval:        full_attention_interval n (key, else `period`): il is attention iff (il + 1) % n == 0,
///                    the others recurrent. n 4: il 0-2 recurrent, il 3 full, ...
/// - kv_or_recurrent: head_count_kv[il] > 0 is full attention, 0 is recurrent (lfm2, jamba, granitehybrid).
/// - nemotron_h:      head_count_kv[il] > 0 full; else feed_forward_length[il] == 0 recurrent; else none (MLP).
/// - all_recurrent:   every layer recurrent (mamba2, rwkv7).
/// - parallel_hybrid: attention and a recurrent mixer side by side in every layer (falcon-h1); model_desc has
///                    one kind per layer, so these read as full attention and the state is not counted.
enum class gguf_layout : uint8_t {
    attention, swa_period, chunked_period, interval, kv_or_recurrent, nemotron_h, all_recurrent, parallel_hybrid,
};

/// One architecture: its general.architecture name, layout and parameters, and where the rule comes from.
struct gguf_arch_row {
    std::string_view arch;      ///< general.architecture
    gguf_layout layout;
    uint32_t period;            ///< swa/chunk period or default full_attention_interval; 0 when unused
    uint32_t window;            ///< default n_swa (swa_period) or fixed n_chunk (chunked_period), tokens
    recurrent_kind rec;         ///< family of the recurrent layers
    bool mla;                   ///< MLA layers when <arch>.attention.key_length_mla is present
    uint32_t kv_from_start;     ///< layers il >= this reuse an earlier layer's KV (kind none); 0 = all own KV
    std::string_view cite;      ///< llama.cpp source of the rule
};

/// The row for a general.architecture name, or nullptr when kvfit has none.
const gguf_arch_row * find_gguf_arch(std::string_view arch);

/// The row used for unknown architectures: generic keys, attention layout.
const gguf_arch_row & generic_gguf_arch();

} // namespace kvfit::detail
