#pragma once
// The probe's measurements (tests/conformance/measure_spec.mjs -> tests/conformance/measured/spec-*.jsonl): one JSON
// line per context llama.cpp created, with its memory breakdown per buffer type in exact bytes.
#include "kvfit/llamacpp.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kvfit::test {

/// The lines of tests/conformance/measured/<file> that are contexts llama.cpp created ("kind": "context", "ok").
/// A missing file gives no rows (the caller asserts a count).
std::vector<nlohmann::json> spec_contexts(const std::string & file);

/// The bytes of one breakdown column summed over the row's buffer types: "context" (KV + recurrent state),
/// "compute", "model" (llama_memory_breakdown, llama-context.cpp).
uint64_t breakdown_bytes(const nlohmann::json & row, const char * column);

/// The settings a row's request ("req") asked the probe for: n_ctx, n_seq (1), n_batch (2048), n_ubatch (512),
/// fa ("on"), type_k for both K and V ("f16"), with the release measured.
kvfit::llamacpp_settings spec_settings(const nlohmann::json & req, kvfit::llamacpp_release release);

} // namespace kvfit::test
