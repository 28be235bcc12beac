// The GPU table (data/gpus.csv) and the `--gpu` list parser that reads names as well as sizes.
#include "kvfit/gpus.h"
#include "kvfit/error.h"
#include "kvfit/units.h"
#include "core/embedded.h"
#include "planner/gpu_table.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <utility>

namespace kvfit {
namespace detail {

namespace {

constexpr std::string_view k_header =
    "name,aliases,vendor,arch,compute_capability,marketed_gb,reported_mib,reported_source,runtime_mib,runtime_source,"
    "memory_bandwidth_gbs,fp16_tflops_dense,source,notes";
constexpr size_t k_columns = 14;

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// One CSV line -> fields. Quoted fields may hold commas; "" inside quotes is one quote. No multi-line fields.
std::vector<std::string> split_csv_line(std::string_view line, const std::string & where) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                fields.back() += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                fields.back() += c;
            }
        } else if (c == '"' && fields.back().empty()) {
            quoted = true;
        } else if (c == ',') {
            fields.emplace_back();
        } else {
            fields.back() += c;
        }
    }
    if (quoted) throw error::at(where, "unterminated quote");
    return fields;
}

// A positive decimal number ("716.8"); `column` names it in the error.
double parse_positive(std::string_view text, std::string_view column, const std::string & where) {
    text = trim(text);
    double v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v)) {
        throw error::at(where, fmt::format("{} '{}': expected a number", column, text));
    }
    if (v <= 0) throw error::at(where, fmt::format("{} '{}': must be positive", column, text));
    return v;
}

std::vector<std::string> split_aliases(std::string_view text) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = std::min(text.find(';', start), text.size());
        const std::string_view a = trim(text.substr(start, end - start));
        if (!a.empty()) out.emplace_back(a);
        start = end + 1;
    }
    return out;
}

// A whole positive number of `unit` ("24" GB, "23034" MiB) at most `max`.
uint64_t parse_whole(std::string_view text, std::string_view column, double max, const std::string & where) {
    const double v = parse_positive(text, column, where);
    if (v != std::floor(v) || v > max) {
        throw error::at(where, fmt::format("{} '{}': expected a whole number up to {}", column, trim(text), max));
    }
    return uint64_t(v);
}

gpu_info parse_row(const std::vector<std::string> & f, const std::string & where) {
    gpu_info g;
    g.name = std::string(trim(f[0]));
    g.aliases = split_aliases(f[1]);
    g.vendor = std::string(trim(f[2]));
    g.arch = std::string(trim(f[3]));
    g.reported_source = std::string(trim(f[7]));
    g.runtime_source = std::string(trim(f[9]));
    g.source = std::string(trim(f[12]));
    g.notes = std::string(trim(f[13]));
    if (g.name.empty()) throw error::at(where, "empty name");
    if (g.vendor.empty() || g.arch.empty()) throw error::at(where, fmt::format("'{}': empty vendor or arch", g.name));
    if (g.source.empty()) throw error::at(where, fmt::format("'{}': empty source", g.name));
    const std::string_view cc = trim(f[4]);
    if (!cc.empty()) g.compute_capability = parse_positive(cc, "compute_capability", where);
    if (g.vendor == "NVIDIA" && g.compute_capability == 0) {
        throw error::at(where, fmt::format("'{}': NVIDIA row needs a compute_capability", g.name));
    }
    constexpr double max_mib = double(1 << 23); // 8 TiB
    g.marketed_gb = uint32_t(parse_whole(f[5], "marketed_gb", 1 << 13, where));
    g.reported_bytes = parse_whole(f[6], "reported_mib", max_mib, where) << 20;
    if (g.reported_source.empty()) throw error::at(where, fmt::format("'{}': empty reported_source", g.name));
    const bool apple = g.vendor == "Apple";
    if (apple != trim(f[8]).empty()) {
        throw error::at(where, fmt::format("'{}': runtime_mib {} (Metal budgets the working set from the unified "
                                           "memory; CUDA and HIP report a total)", g.name,
                                           apple ? "must be empty on an Apple row" : "is missing"));
    }
    if (!apple) {
        g.runtime_bytes = parse_whole(f[8], "runtime_mib", max_mib, where) << 20;
        if (g.runtime_source.empty()) throw error::at(where, fmt::format("'{}': empty runtime_source", g.name));
        if (g.runtime_bytes > g.reported_bytes) {
            throw error::at(where, fmt::format("'{}': runtime_mib {} exceeds reported_mib {} (the driver's total "
                                               "includes what CUDA sees)", g.name, g.runtime_bytes >> 20,
                                               g.reported_bytes >> 20));
        }
    }
    g.reported_estimate = g.reported_source.starts_with("estimate:");
    g.runtime_estimate = g.runtime_source.starts_with("estimate:");
    g.memory_bytes = apple ? g.reported_bytes : g.runtime_bytes;
    // GB/s and TFLOPS carry at most a few decimals: round to the nearest byte/s and FLOP/s.
    g.bandwidth_bytes_per_s = static_cast<uint64_t>(std::llround(parse_positive(f[10], "memory_bandwidth_gbs", where) * 1e9));
    g.fp16_flops_per_s = std::round(parse_positive(f[11], "fp16_tflops_dense", where) * 1e12);
    return g;
}

const std::vector<std::string_view> k_vendor_words = {"nvidia", "geforce", "amd", "instinct", "apple"};

} // namespace

std::string normalize_gpu_name(std::string_view name) {
    std::string lower;
    for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // Drop leading vendor words, each followed by a separator, so "nvidia-smi" names match.
    std::string_view rest = lower;
    for (bool dropped = true; dropped;) {
        dropped = false;
        rest = trim(rest);
        for (std::string_view w : k_vendor_words) {
            if (rest.size() > w.size() && rest.substr(0, w.size()) == w &&
                std::string_view(" -_").find(rest[w.size()]) != std::string_view::npos) {
                rest.remove_prefix(w.size() + 1);
                dropped = true;
            }
        }
    }
    std::string out;
    for (char c : rest) {
        if (c != ' ' && c != '-' && c != '_' && c != '.' && c != '\t') out += c;
    }
    return out;
}

std::vector<gpu_info> parse_gpu_csv(std::string_view csv, std::string_view where_file) {
    std::vector<gpu_info> rows;
    std::map<std::string, std::string> owner; // normalized name or alias -> the row that took it first
    size_t line_no = 0, start = 0;
    bool header_seen = false;
    while (start < csv.size()) {
        const size_t end = std::min(csv.find('\n', start), csv.size());
        std::string_view line = csv.substr(start, end - start);
        start = end + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (trim(line).empty()) continue;
        const std::string where = fmt::format("{}: line {}", where_file, line_no);
        if (!header_seen) {
            if (line != k_header) throw error::at(where, fmt::format("expected header '{}'", k_header));
            header_seen = true;
            continue;
        }
        const auto fields = split_csv_line(line, where);
        if (fields.size() != k_columns) {
            throw error::at(where, fmt::format("{} fields, expected {}", fields.size(), k_columns));
        }
        gpu_info g = parse_row(fields, where);
        std::vector<std::string> keys{g.name};
        keys.insert(keys.end(), g.aliases.begin(), g.aliases.end());
        for (const auto & k : keys) {
            const std::string norm = normalize_gpu_name(k);
            if (norm.empty()) throw error::at(where, fmt::format("'{}': name or alias '{}' is empty once normalized", g.name, k));
            const auto [it, inserted] = owner.emplace(norm, g.name);
            if (!inserted) {
                throw error::at(where, fmt::format("'{}': '{}' already names '{}'", g.name, k, it->second));
            }
        }
        rows.push_back(std::move(g));
    }
    if (!header_seen) throw error::at(where_file, "empty table");
    return rows;
}

} // namespace detail

// --- lookups ----------------------------------------------------------------------------------------------

const std::vector<gpu_info> & gpu_table() {
    static const std::vector<gpu_info> table = detail::parse_gpu_csv(detail::embedded("gpus.csv"), "gpus.csv");
    return table;
}

const gpu_info * find_gpu(std::string_view name) {
    const std::string key = detail::normalize_gpu_name(name);
    if (key.empty()) return nullptr;
    for (const auto & g : gpu_table()) {
        if (detail::normalize_gpu_name(g.name) == key) return &g;
        for (const auto & a : g.aliases) {
            if (detail::normalize_gpu_name(a) == key) return &g;
        }
    }
    return nullptr;
}

namespace detail {

std::vector<std::string> gpu_family_keys(std::string_view name) {
    std::vector<std::string> tokens(1);
    for (char c : name) {
        if (c == ' ' || c == '-' || c == '_' || c == '\t') {
            if (!tokens.back().empty()) tokens.emplace_back();
        } else if (c != '.') {
            tokens.back() += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    if (tokens.back().empty()) tokens.pop_back();
    size_t first = 0;
    while (first < tokens.size() &&
           std::find(k_vendor_words.begin(), k_vendor_words.end(), tokens[first]) != k_vendor_words.end()) {
        ++first;
    }
    // trailing sizes ("80gb", "144g", "2tb") and form factors: the SXM and PCIe boards of a chip, its HBM generation
    static const std::vector<std::string_view> forms = {"sxm", "sxm2", "sxm4", "sxm5", "sxm6", "pcie", "hbm3", "hbm3e"};
    auto is_size = [](const std::string & t) {
        const size_t d = t.find_first_not_of("0123456789");
        return d > 0 && d != std::string::npos && (t.substr(d) == "gb" || t.substr(d) == "g" || t.substr(d) == "tb");
    };
    size_t last = tokens.size();
    while (last > first + 1 && (is_size(tokens[last - 1]) ||
                                std::find(forms.begin(), forms.end(), tokens[last - 1]) != forms.end())) {
        --last;
    }
    std::vector<std::string> keys;
    if (first == last) return keys;
    std::string key;
    for (size_t i = first; i < last; ++i) key += tokens[i];
    keys.push_back(key);
    if (tokens[first] == "rtx" && last > first + 1) keys.push_back(key.substr(3)); // "RTX 3060" and "3060"
    return keys;
}

} // namespace detail

namespace {

// Family key -> rows, over every name and alias (gpu_family_keys); built once (the table is immutable).
const std::map<std::string, std::vector<size_t>> & family_index() {
    static const std::map<std::string, std::vector<size_t>> families = [] {
        std::map<std::string, std::vector<size_t>> f;
        const auto & t = gpu_table();
        for (size_t i = 0; i < t.size(); ++i) {
            std::vector<std::string> names = t[i].aliases;
            names.push_back(t[i].name);
            for (const auto & n : names) {
                for (const auto & k : detail::gpu_family_keys(n)) {
                    if (f[k].empty() || f[k].back() != i) f[k].push_back(i);
                }
            }
        }
        return f;
    }();
    return families;
}

// The words of a name, lower case, split at spaces, '-' and '_' (as gpu_family_keys splits them).
std::vector<std::string> name_words(std::string_view name) {
    std::vector<std::string> words(1);
    for (char c : name) {
        if (c == ' ' || c == '-' || c == '_' || c == '\t') {
            if (!words.back().empty()) words.emplace_back();
        } else {
            words.back() += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    if (words.back().empty()) words.pop_back();
    return words;
}

// "24gb", "24g" -> 24; anything else -> 0.
uint32_t size_word_gb(const std::string & w) {
    const size_t d = w.find_first_not_of("0123456789");
    if (d == 0 || d == std::string::npos || d > 6 || (w.substr(d) != "gb" && w.substr(d) != "g")) return 0;
    return uint32_t(std::stoul(w.substr(0, d)));
}

bool is_form_word(const std::string & w) {
    static const std::vector<std::string_view> forms = {"sxm", "sxm2", "sxm4", "sxm5", "sxm6", "pcie", "nvl"};
    return std::find(forms.begin(), forms.end(), w) != forms.end();
}

} // namespace

gpu_family_match match_gpu_family(std::string_view name) {
    gpu_family_match out;
    const auto keys = detail::gpu_family_keys(name);
    if (keys.empty()) return out;
    const auto it = family_index().find(keys.front());
    if (it == family_index().end()) return out;
    for (const std::string & w : name_words(name)) {
        if (const uint32_t gb = size_word_gb(w)) out.size_gb = gb;
        else if (is_form_word(w)) out.form = w.starts_with("sxm") ? "sxm" : w;
    }
    for (size_t i : it->second) {
        const gpu_info & g = gpu_table()[i];
        out.family.push_back(&g);
        if (out.size_gb && uint32_t(g.marketed_gb) != out.size_gb) continue;
        if (!out.form.empty()) { // the row's own name or an alias spells the form factor
            bool has = false;
            std::vector<std::string> names = g.aliases;
            names.push_back(g.name);
            for (const auto & n : names) {
                for (const auto & w : name_words(n)) has |= w == out.form || (out.form == "sxm" && w.starts_with("sxm"));
            }
            if (!has) continue;
        }
        out.rows.push_back(&g);
    }
    return out;
}

std::vector<const gpu_info *> gpu_choices(std::string_view name) {
    if (find_gpu(name)) return {};
    const auto keys = detail::gpu_family_keys(name);
    if (keys.empty()) return {};
    const auto it = family_index().find(keys.front());
    if (it == family_index().end()) return {};
    std::vector<const gpu_info *> rows;
    bool sizes_differ = false;
    for (size_t i : it->second) {
        rows.push_back(&gpu_table()[i]);
        sizes_differ |= rows.back()->marketed_gb != rows.front()->marketed_gb;
    }
    return sizes_differ ? rows : std::vector<const gpu_info *>{};
}

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

} // namespace

std::vector<std::string> closest_gpu_names(std::string_view name, size_t n) {
    const std::string key = detail::normalize_gpu_name(name);
    struct scored { size_t distance; size_t index; };
    std::vector<scored> all;
    const auto & table = gpu_table();
    for (size_t i = 0; i < table.size(); ++i) {
        // a name or alias containing the query scores 0: a partial name ("M3 Max") ranks the rows it is part of first
        // ("M3 Max 128GB"), before mere near spellings (issue 13 item 7)
        auto score = [&](const std::string & norm) {
            return !key.empty() && norm.find(key) != std::string::npos ? 0 : edit_distance(key, norm);
        };
        size_t best = score(detail::normalize_gpu_name(table[i].name));
        for (const auto & a : table[i].aliases) best = std::min(best, score(detail::normalize_gpu_name(a)));
        all.push_back({best, i});
    }
    std::stable_sort(all.begin(), all.end(), [](const scored & x, const scored & y) { return x.distance < y.distance; });
    std::vector<std::string> out;
    for (size_t i = 0; i < all.size() && i < n; ++i) out.push_back(table[all[i].index].name);
    return out;
}

// --- --gpu ------------------------------------------------------------------------------------------------

namespace {

constexpr uint64_t k_max_devices = 64;

// "<N>x<rest>" -> {N, rest}; anything else -> {1, item}. "4090" has no 'x' after its digits, so it stays a name.
std::pair<uint64_t, std::string_view> split_count(std::string_view item, const std::string & where) {
    size_t digits = 0;
    while (digits < item.size() && std::isdigit(static_cast<unsigned char>(item[digits]))) ++digits;
    if (digits == 0 || digits == item.size() || (item[digits] != 'x' && item[digits] != 'X')) return {1, item};
    if (digits > 6) throw error::at(where, "device count outside 1..64");
    uint64_t count = 0;
    std::from_chars(item.data(), item.data() + digits, count);
    if (count == 0 || count > k_max_devices) throw error::at(where, fmt::format("device count {} outside 1..64", count));
    const std::string_view rest = detail::trim(item.substr(digits + 1));
    if (rest.empty()) throw error::at(where, "expected a GPU name or size after the count");
    return {count, rest};
}

// A name without its size and form-factor words, as typed: "M5 Max 36GB" -> "M5 Max".
std::string family_text(std::string_view name) {
    std::string out;
    for (const std::string & w : name_words(name)) {
        if (size_word_gb(w) || is_form_word(w)) continue;
        // the word as typed (its case), found at the same position in the lower-case copy
        out += (out.empty() ? "" : " ") + w;
    }
    std::string typed(name);
    const std::string lower = [&] {
        std::string l = typed;
        for (auto & c : l) c = char(std::tolower(static_cast<unsigned char>(c)));
        return l;
    }();
    const size_t at = lower.find(out);
    return at == std::string::npos ? out : typed.substr(at, out.size());
}

// A number with a unit parse_size() reads: "24GiB", "80GB", "512MiB" (not "4090": no unit).
bool size_with_unit(std::string_view text) {
    if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text.front())) || text.front() == '.') ||
        !std::isalpha(static_cast<unsigned char>(text.back()))) {
        return false;
    }
    try {
        (void)parse_size(text);
        return true;
    } catch (const error &) {
        return false;
    }
}

} // namespace

std::vector<device_spec> parse_gpu_list(std::string_view text) {
    std::vector<device_spec> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = std::min(text.find(',', start), text.size());
        const std::string_view item = detail::trim(text.substr(start, end - start));
        start = end + 1;
        if (item.empty()) throw error(fmt::format("gpu '{}': empty entry", text));
        const std::string where = fmt::format("gpu '{}'", item);
        const auto [count, rest] = split_count(item, where);
        if (out.size() + count > k_max_devices) {
            throw error(fmt::format("gpu '{}': more than {} devices", text, k_max_devices));
        }
        // a number with a unit ("24GiB", "80GB") is a size, never a table name (test_gpus checks every name and alias):
        // the table is not parsed for it
        if (size_with_unit(rest)) {
            const uint64_t bytes = parse_size(rest);
            if (bytes == 0) throw error::at(where, "device memory must be positive");
            for (uint64_t i = 0; i < count; ++i) out.push_back({fmt::format("GPU{}", out.size()), bytes});
            continue;
        }
        if (const gpu_info * g = find_gpu(rest)) {
            for (uint64_t i = 0; i < count; ++i) {
                out.push_back({g->name, g->memory_bytes, g->compute_capability, g->vendor, g->marketed_gb,
                               g->reported_bytes, g->vendor != "Apple" && g->runtime_estimate});
            }
            continue;
        }
        // a family name with its size or form factor spelled another way ("RTX 4090 24GB", "A100 PCIe 40GB")
        if (const gpu_family_match fm = match_gpu_family(rest); !fm.family.empty() && !size_with_unit(rest)) {
            std::vector<std::string> names;
            for (const gpu_info * c : fm.rows.empty() ? fm.family : fm.rows) names.push_back(c->name);
            // one row left, and no size left open: a size stated, or a family sold in one size
            const bool sizes_differ = std::any_of(fm.family.begin(), fm.family.end(), [&](const gpu_info * c) {
                return c->marketed_gb != fm.family.front()->marketed_gb;
            });
            if (fm.rows.size() == 1 && !fm.size_gb && sizes_differ) {
                names.clear();
                for (const gpu_info * c : fm.family) names.push_back(c->name);
                throw error::at(where, fmt::format("sold with several memory sizes, name one: {}", fmt::join(names, ", ")));
            }
            if (fm.rows.size() == 1) {
                const gpu_info * g = fm.rows.front();
                for (uint64_t i = 0; i < count; ++i) {
                    out.push_back({g->name, g->memory_bytes, g->compute_capability, g->vendor, g->marketed_gb,
                                   g->reported_bytes, g->vendor != "Apple" && g->runtime_estimate});
                }
                continue;
            }
            if (fm.rows.empty()) {
                throw error::at(where, fmt::format("the GPU table has no {} {}{}: it has {}", family_text(rest),
                                                   fm.size_gb ? fmt::format("with {} GB", fm.size_gb) : "",
                                                   fm.form.empty() ? "" : fmt::format("{}in the {} form", fm.size_gb ? " " : "", fm.form),
                                                   fmt::join(names, ", ")));
            }
            if (fm.rows.size() > 1) {
                const bool sizes = std::any_of(fm.rows.begin(), fm.rows.end(), [&](const gpu_info * c) {
                    return c->marketed_gb != fm.rows.front()->marketed_gb;
                });
                throw error::at(where, fmt::format("{}, name one: {}", sizes ? "sold with several memory sizes" : "sold as several boards",
                                                   fmt::join(names, ", ")));
            }
        }
        const std::string_view name = rest; // clang 14 cannot capture a structured binding
        const auto closest = [&] { return fmt::format("{}", fmt::join(closest_gpu_names(name, 3), ", ")); };
        // a negative size is a size, not a name
        if (rest.front() == '-' && size_with_unit(rest.substr(1))) {
            throw error::at(where, "device memory must be positive");
        }
        // Text that does not start like a number cannot be a size: report it as an unknown GPU.
        if (!std::isdigit(static_cast<unsigned char>(rest.front())) && rest.front() != '.') {
            throw error::at(where, fmt::format("unknown GPU (closest: {})", closest()));
        }
        // a bare number is not a size (GiB? GB? bytes?): refused with the spellings that are
        if (rest.find_first_not_of("0123456789.") == std::string_view::npos) (void)parse_size_flag("--gpu", rest);
        uint64_t bytes = 0;
        try {
            bytes = parse_size(rest);
        } catch (const error & e) {
            throw error::at(where, fmt::format("not a known GPU (closest: {}) nor a size ({})", closest(), e.what()));
        }
        if (bytes == 0) throw error::at(where, "device memory must be positive");
        for (uint64_t i = 0; i < count; ++i) out.push_back({fmt::format("GPU{}", out.size()), bytes});
    }
    return out;
}

} // namespace kvfit
