#pragma once
// What the launch command of a serving runtime loads (vLLM, SGLang, Ollama's Modelfile): the Hub id of a catalog model
// or of an hf: model ("hf:Qwen/Qwen3-8B@main" -> "Qwen/Qwen3-8B"), the folder of a config.json (an engine loads the
// folder, never the file), else the path as given (a GGUF). Not public API.
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
    const std::string file = "config.json";
    if (m.source == file) return ".";
    if (m.source.size() > file.size() && m.source.ends_with("/" + file)) return m.source.substr(0, m.source.size() - file.size() - 1);
    return m.source.empty() ? m.name : m.source;
}

} // namespace kvfit::detail
