#pragma once
/// @file llamacpp_flags.h
/// Values of llama.cpp's command-line flags, parsed once for every front end (the kvfit CLI, `kvfit exec`
/// reading a llama-server command, the HTTP API). Spelling and accepted values follow llama.cpp common/arg.cpp.
/// Every function throws kvfit::error with a one-line message naming the flag and the value.

#include "kvfit/ggml_type.h"
#include "kvfit/runtime.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

/// A whole number for `flag` in [min, max]: "-c 8192". Rejects signs, fractions, exponents and trailing text:
/// "-c 0: must be at least 1", "-c '-1': expected a positive integer", "-ub 99999999: exceeds the limit 1048576".
uint64_t parse_flag_count(std::string_view flag, std::string_view text, uint64_t min, uint64_t max);

/// A KV cache type for -ctk/-ctv: one of llama.cpp's kv_cache_types (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl,
/// q5_0, q5_1). "-ctk 'q9_9': unknown cache type (allowed: ...)".
ggml_type parse_cache_type_flag(std::string_view flag, std::string_view name);

/// -fa / --flash-attn as llama.cpp reads it (common/arg.cpp: is_truthy, is_falsey, is_autoy): on, enabled, true, 1;
/// off, disabled, false, 0; auto, -1. "-fa 'maybe': expected on, off or auto (or 1, 0, true, false, -1)".
flash_attn_mode parse_flash_attn_flag(std::string_view flag, std::string_view value);

/// -ts proportions, comma- or slash-separated finite non-negative numbers (at most 1e9): "3,1" -> {3, 1}.
/// All zeros give an empty vector: llama.cpp's default split by free memory (llama_model::load_tensors).
std::vector<double> parse_tensor_split(std::string_view text);

/// One -ot rule "PATTERN=BUFFER": the pattern when BUFFER is CPU (validated as a std::regex, as llama.cpp
/// compiles it), std::nullopt for another buffer type (not modelled by kvfit). Throws for a rule without '='
/// or an invalid regular expression.
std::optional<std::string> parse_override_rule(std::string_view rule);

} // namespace kvfit
