// Dispatch a model name or path to its source (include/kvfit/sources.h: load_model).
#include "kvfit/error.h"
#include "kvfit/local.h"
#include "kvfit/remote.h"
#include "kvfit/safetensors.h"
#include "kvfit/sources.h"
#include "sources/text.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>

namespace kvfit {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t k_max_config_bytes = 64ull << 20; // a config.json is a few KB; refuse anything absurd

std::string read_text(const fs::path & path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) throw error::at(path.string(), "cannot read: " + ec.message());
    if (size > k_max_config_bytes) {
        throw error::at(path.string(), fmt::format("{} bytes exceeds the config.json limit of {} bytes", size, k_max_config_bytes));
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) throw error::at(path.string(), "cannot open");
    std::string text(size, '\0'); // read in place: a stringstream would hold the file twice
    in.read(text.data(), std::streamsize(size));
    text.resize(size_t(in.gcount()));
    return text;
}

bool has_gguf_magic(const fs::path & path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    return in.gcount() == 4 && std::string_view(magic, 4) == "GGUF";
}

// " (closest: A, B; a Hugging Face repository: hf:org/name)", or the catalog's --list when nothing is close.
std::string suggestions(std::string_view spec) {
    const std::vector<std::string> close = closest_catalog_names(spec, 3);
    std::string out;
    for (const auto & c : close) out += (out.empty() ? "closest: " : ", ") + c;
    const std::string text(spec);
    const size_t slash = text.find('/');
    const bool repo_like = slash != std::string::npos && slash > 0 && slash + 1 < text.size() &&
                           text.find('/', slash + 1) == std::string::npos && !text.ends_with(".json") &&
                           !text.ends_with(".gguf") && text.front() != '.';
    if (repo_like) out += fmt::format("{}a Hugging Face repository: hf:{}", out.empty() ? "" : "; ", text);
    if (out.empty()) out = "kvfit --list shows the catalog";
    return " (" + out + ")";
}

} // namespace

model_desc load_model(std::string_view spec, warnings & warn) {
    if (spec.empty()) throw error("model: empty name (a catalog name, config.json, model directory or .gguf)");
    // a file's name is not looked up in the catalog (no catalog name or id ends in .gguf / .json): the catalog is
    // parsed only when the model may be in it
    const bool file_name = detail::iends_with(spec, ".gguf") || detail::iends_with(spec, ".json");
    if (const catalog_entry * e = file_name ? nullptr : find_catalog(spec)) return model_from_catalog(*e, warn);
    if (spec.starts_with("hf:")) return model_from_hf(spec, remote_options_from_env(), warn);
    if (spec.starts_with("ollama:")) return model_from_ollama(spec, local_roots_from_env(), warn);
    const fs::path path{std::string(spec)};
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        const fs::path cfg = detail::find_entry_icase(path, "config.json");
        if (!fs::exists(cfg, ec)) throw error::at(path.string(), "directory holds no config.json");
        const std::string cfg_text = read_text(cfg);
        model_desc m = model_from_hf_config(cfg_text, cfg.string(), warn);
        m.source = cfg.string();
        m.name = model_name_from_path(cfg.string());
        // The shape is config.json's; the safetensors headers beside it make the weights exact.
        const auto shards = safetensors_open_dir(path.string());
        if (!shards.empty()) apply_safetensors_weights(m, shards, cfg_text, path.string(), warn);
        return m;
    }
    if (!fs::exists(path, ec)) {
        throw error::at(spec, "no such file or catalog model" + suggestions(spec));
    }
    if (!fs::is_regular_file(path, ec)) throw error::at(spec, "not a regular file");
    if (has_gguf_magic(path)) return model_from_gguf(path.string(), warn);
    if (detail::iequals(path.extension().string(), ".gguf")) throw error::at_offset(path.string(), 0, "not a GGUF file (bad magic)");
    model_desc m = model_from_hf_config(read_text(path), path.string(), warn);
    m.source = path.string();
    m.name = model_name_from_path(path.string());
    return m;
}

std::string model_name_from_path(std::string_view path_text) {
    fs::path path{std::string(path_text)};
    if (!path.has_filename()) path = path.parent_path(); // "models/x/" -> "models/x"
    if (detail::iequals(path.filename().string(), "config.json")) {
        const fs::path dir = path.parent_path().filename(); // lexical: an upload's name is not a real path
        if (!dir.empty()) return dir.string();
    }
    return path.stem().string();
}

} // namespace kvfit
