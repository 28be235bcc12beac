// The built-in model catalog: data/catalog/index.json lists the models in display order, each naming a
// config.json under data/catalog/ (data/catalog/README.md says where each comes from). Both are embedded in
// the library at build time, so the catalog needs no file and no network.
#include "kvfit/sources.h"

#include "core/embedded.h"
#include "kvfit/error.h"
#include "sources/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <deque>
#include <string>

namespace kvfit {
namespace {

constexpr std::string_view k_index = "catalog/index.json";

// A broken index is kvfit's own bug (the data ships inside the binary): the error names the embedded file.
std::vector<catalog_entry> load_catalog(std::deque<std::string> & strings) {
    const std::string_view text = detail::embedded(k_index);
    if (text.empty()) throw error::at(k_index, "missing from the embedded data");
    const auto index = nlohmann::json::parse(text, nullptr, false);
    if (!index.is_array()) throw error::at(k_index, "expected an array of {name, hf_id, file}");
    std::vector<catalog_entry> out;
    for (const auto & e : index) {
        if (!e.is_object() || !e.contains("name") || !e.contains("hf_id") || !e.contains("file")) {
            throw error::at(k_index, "entry without name, hf_id and file");
        }
        const std::string & name = strings.emplace_back(e["name"].get<std::string>());
        const std::string & hf_id = strings.emplace_back(e["hf_id"].get<std::string>());
        const std::string file = "catalog/" + e["file"].get<std::string>();
        const std::string_view config = detail::embedded(file);
        if (config.empty()) throw error::at(k_index, "entry '" + name + "': no embedded file " + file);
        const bool gguf_keys = e.contains("format") && e["format"] == "gguf_keys";
        if (e.contains("format") && !gguf_keys && e["format"] != "config.json") {
            throw error::at(k_index, "entry '" + name + "': format must be config.json or gguf_keys");
        }
        out.push_back(catalog_entry{name, hf_id, config, gguf_keys});
    }
    return out;
}

} // namespace

const std::vector<catalog_entry> & catalog() {
    static std::deque<std::string> strings; // owns the names the entries view; a deque never moves them
    static const std::vector<catalog_entry> entries = load_catalog(strings);
    return entries;
}

std::string_view default_model_name() { return catalog().front().name; }

const catalog_entry * find_catalog(std::string_view name) {
    for (const auto & e : catalog()) {
        if (detail::iequals(e.name, name) || detail::iequals(e.hf_id, name)) return &e;
    }
    return nullptr;
}

} // namespace kvfit
