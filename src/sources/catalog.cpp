// The built-in model catalog: data/catalog/index.json lists the models in display order, each naming a
// config.json under data/catalog/ (data/catalog/README.md says where each comes from). Both are embedded in
// the library at build time, so the catalog needs no file and no network.
#include "kvfit/sources.h"

#include "core/embedded.h"
#include "kvfit/error.h"
#include "sources/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
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

std::vector<std::string> closest_catalog_names(std::string_view name, size_t n) {
    auto lower = [](std::string_view t) {
        std::string out(t);
        for (char & c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
        return out;
    };
    auto distance = [](const std::string & a, const std::string & b) { // Levenshtein, two rows
        std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
        for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
        for (size_t i = 1; i <= a.size(); ++i) {
            cur[0] = i;
            for (size_t j = 1; j <= b.size(); ++j) {
                cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            }
            std::swap(prev, cur);
        }
        return prev[b.size()];
    };
    const std::string q = lower(name);
    if (q.empty()) return {};
    struct hit { size_t score; size_t order; std::string name; };
    std::vector<hit> hits;
    size_t order = 0;
    for (const auto & e : catalog()) {
        const std::string a = lower(e.name), b = lower(e.hf_id);
        size_t score;
        if (a.find(q) != std::string::npos || b.find(q) != std::string::npos) {
            score = 0;
        } else {
            const size_t da = distance(q, a), db = distance(q, b);
            const size_t d = std::min(da, db);
            const size_t limit = std::max<size_t>(2, std::max(q.size(), da <= db ? a.size() : b.size()) / 3);
            if (d > limit) {
                ++order;
                continue;
            }
            score = d;
        }
        hits.push_back({score, order++, std::string(e.name)});
    }
    std::stable_sort(hits.begin(), hits.end(), [](const hit & x, const hit & y) { return x.score < y.score; });
    std::vector<std::string> out;
    for (size_t i = 0; i < hits.size() && out.size() < n; ++i) out.push_back(hits[i].name);
    return out;
}

} // namespace kvfit
