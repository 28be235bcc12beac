#pragma once
// What the launch command of a serving runtime loads (vLLM, SGLang, Ollama's Modelfile): the Hub id of a catalog model
// or of an hf: model ("hf:Qwen/Qwen3-8B@main" -> "Qwen/Qwen3-8B"), the folder of a config.json or of any other .json
// config file (an engine loads the folder, never the file), else the path as given (a GGUF). Not public API.
#include "kvfit/model.h"
#include "kvfit/sources.h"

#include <string>

namespace kvfit::detail {

inline std::string launch_model_ref(const model_desc & m) {
    if (m.source == "catalog") {
        if (const catalog_entry * e = find_catalog(m.name)) return std::string(e->hf_id);
        return m.name;
    }
    if (m.source.starts_with("hf:")) {
        std::string id = m.source.substr(3);
        const size_t slash = id.find('/');
        const size_t end = id.find_first_of("@:", slash == std::string::npos ? 0 : slash);
        return end == std::string::npos ? id : id.substr(0, end);
    }
    // a config file by any name (config.json, or a copy like Kimi-K3.json): the engine loads the folder that holds the
    // checkpoint, never a .json file
    if (m.source.ends_with(".json")) {
        const size_t slash = m.source.rfind('/');
        return slash == std::string::npos ? "." : slash == 0 ? "/" : m.source.substr(0, slash);
    }
    return m.source.empty() ? m.name : m.source;
}

/// The --quantization a serving launch line adds for weights planned in a format the checkpoint does not state
/// (--weights fp8 on a bf16 checkpoint: weight_quant::requested): "fp8" where the engine quantizes when it loads
/// (vLLM fp8.py Fp8Config without is_checkpoint_fp8_serialized: dynamic per-tensor fp8; SGLang's --quantization fp8
/// likewise), "" otherwise -- block fp8, AWQ, GPTQ, NVFP4 and MXFP4 are read from a quantized checkpoint, and
/// serving_model_warnings names the checkpoint they need.
inline std::string launch_quantization(const model_desc & m) {
    return m.quant.requested && m.quant.method == "fp8" && m.quant.block_n == 0 ? "fp8" : "";
}

} // namespace kvfit::detail
