// Hugging Face Hub repositories read by HTTP Range requests (include/kvfit/remote.h): the listing picks the files,
// config.json and the index come whole, safetensors and GGUF files give their headers only. Every file fetched is
// cached by its id from the listing, so the cache is never stale and --offline needs no request.
#include "kvfit/remote.h"

#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "kvfit/local.h"
#include "kvfit/safetensors.h"
#include "sources/http.h"
#include "sources/hub_listing.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <unistd.h>
#include "core/util.h"

namespace kvfit {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t k_whole_file_cap = 64ull << 20;   // config.json, the index: a few kB to a few MB
constexpr uint64_t k_listing_cap = 64ull << 20;
constexpr uint64_t k_st_first_range = 64 << 10;      // most safetensors headers fit: one request per file
constexpr uint64_t k_gguf_first_range = 2 << 20;     // a 32k-token vocabulary; larger ones take a second request
constexpr uint64_t k_gguf_max_header = 512ull << 20;
constexpr int k_max_listing_pages = 100;

using detail::hub_file;

bool valid_name(std::string_view s, std::string_view extra) {
    if (s.empty() || s.find("..") != std::string_view::npos) return false;
    return std::all_of(s.begin(), s.end(), [&](unsigned char c) {
        return std::isalnum(c) || c == '-' || c == '_' || c == '.' || extra.find(char(c)) != std::string_view::npos;
    });
}

std::string upper(std::string s) {
    for (char & c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
    return s;
}


/// A repository at a revision: its listing, its files, the cache.
class hub {
public:
    hub(const remote_options & o, const hf_spec & s, remote_stats & stats, warnings & warn)
        : o_(o), s_(s), stats_(stats), warn_(warn), http_(o, &stats) {
        label_ = "hf:" + s.repo + (s.revision == "main" ? "" : "@" + s.revision);
        if (!o.cache_dir.empty()) cache_ = fs::path(o.cache_dir) / "hf" / s.repo;
    }

    const std::string & label() const { return label_; }
    std::string where(const hub_file & f) const { return label_ + "/" + f.path; }

    std::vector<hub_file> listing() {
        const fs::path cached = cache_ / "tree" / (detail::url_path_escape(s_.revision) + ".json");
        std::string text;
        if (o_.offline) {
            if (cache_.empty() || !read_file(cached, text)) {
                throw error::at(label_, fmt::format("not in the cache ({}): run once online (offline mode reads only the cache)", cache_.empty() ? "no cache directory" : cached.string()));
            }
            ++stats_.cache_hits;
            return parse_listing(text);
        }
        try {
            text = fetch_listing();
        } catch (const detail::unreachable_error & e) {
            // No network: the cached listing (and the files it names, cached by id) still describe this revision.
            if (cache_.empty() || !read_file(cached, text)) throw;
            ++stats_.cache_hits;
            warn_.push_back(fmt::format("{}: the Hub cannot be reached ({}): using the cached listing of {}", label_,
                                        e.what(), cached.string()));
            return parse_listing(text);
        }
        write_cache(cached, text);
        return parse_listing(text);
    }

    /// A small file, whole.
    std::string whole(const hub_file & f) {
        if (std::string b; cache_get(f, b)) return b;
        offline_miss(f);
        const auto r = http_.get(url(f), std::nullopt, k_whole_file_cap, where(f));
        cache_put(f, r.body);
        return r.body;
    }

    /// A safetensors header: one Range request of 64 KiB, a second for the rest of a longer header.
    safetensors_file safetensors(const hub_file & f) {
        std::string b;
        if (cache_get(f, b)) return safetensors_file::parse(b, f.size, where(f));
        offline_miss(f);
        const uint64_t first = f.size >= 8 ? std::min(f.size, k_st_first_range) : k_st_first_range;
        auto r = http_.get(url(f), detail::byte_range{0, first - 1}, first, where(f));
        const uint64_t size = r.total_bytes > 0 ? r.total_bytes : f.size;
        const uint64_t need = safetensors_file::prefix_bytes(r.body, size, where(f));
        if (need > r.body.size()) {
            const auto rest = http_.get(url(f), detail::byte_range{r.body.size(), need - 1}, need - r.body.size(), where(f));
            r.body += rest.body;
        }
        r.body.resize(std::min<uint64_t>(r.body.size(), need));
        safetensors_file st = safetensors_file::parse(r.body, size, where(f));
        cache_put(f, r.body);
        return st;
    }

    /// A GGUF header: Range requests growing until the last tensor info has arrived.
    gguf_file gguf(const hub_file & f) {
        std::string b;
        uint64_t need = 0;
        if (cache_get(f, b)) {
            if (auto g = gguf_file::parse_prefix(b, f.size, where(f), need)) return *g;
            throw error::at(where(f), "cached header is incomplete: remove it from the cache");
        }
        offline_miss(f);
        uint64_t size = f.size;
        need = size > 0 ? std::min(size, k_gguf_first_range) : k_gguf_first_range;
        while (true) {
            const auto r = http_.get(url(f), detail::byte_range{b.size(), need - 1}, need - b.size(), where(f));
            if (r.body.empty()) throw error::at(where(f), fmt::format("the server sent no bytes from offset {}", b.size()));
            if (b.empty() && r.total_bytes > 0) size = r.total_bytes;
            b += r.body;
            if (auto g = gguf_file::parse_prefix(b, size, where(f), need)) {
                cache_put(f, b);
                return *g;
            }
            // The estimate cannot see arrays still to come (a vocabulary's merges after its tokens) and undershoots
            // when later strings are longer than the first: ask for 1/8 more than it, and at least half again what
            // has arrived, which keeps the bytes within a quarter of the header and the requests to 2 or 3.
            need = std::min(size, std::max(need + need / 8 + (64 << 10), b.size() + b.size() / 2));
            if (need > k_gguf_max_header) {
                throw error::at(where(f), fmt::format("header longer than kvfit's limit of {} bytes (read {} so far)",
                                                      k_gguf_max_header, b.size()));
            }
        }
    }

private:
    const remote_options & o_;
    const hf_spec & s_;
    remote_stats & stats_;
    warnings & warn_;
    detail::http_client http_;
    std::string label_;
    fs::path cache_;
    bool cache_warned_ = false;

    static std::string escape_all(std::string_view s) {
        std::string out = detail::url_path_escape(s);
        for (size_t at; (at = out.find('/')) != std::string::npos;) out.replace(at, 1, "%2F");
        return out;
    }

    std::string url(const hub_file & f) const {
        return fmt::format("{}/{}/resolve/{}/{}", o_.endpoint, s_.repo, escape_all(s_.revision), detail::url_path_escape(f.path));
    }

    std::vector<hub_file> parse_listing(const std::string & text) const { return detail::parse_hub_listing(text, label_); }

    // The listing from the Hub, every page (Link: rel="next") joined into one array.
    std::string fetch_listing() {
        nlohmann::json all = nlohmann::json::array();
        std::string url = fmt::format("{}/api/models/{}/tree/{}?recursive=true", o_.endpoint, s_.repo, escape_all(s_.revision));
        for (int page = 0; !url.empty() && page < k_max_listing_pages; ++page) {
            const auto r = http_.get(url, std::nullopt, k_listing_cap, label_ + ": file listing");
            const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
            if (!j.is_array()) throw error::at(label_, "file listing: expected a JSON array");
            all.insert(all.end(), j.begin(), j.end());
            url = r.next_url;
        }
        return all.dump();
    }

    void offline_miss(const hub_file & f) const {
        if (o_.offline) throw error::at(where(f), "not in the cache: run once online (offline mode reads only the cache)");
    }

    static bool read_file(const fs::path & p, std::string & out) {
        std::ifstream in(p, std::ios::binary);
        if (!in) return false;
        std::ostringstream ss;
        ss << in.rdbuf();
        out = ss.str();
        return true;
    }

    bool cache_get(const hub_file & f, std::string & out) {
        if (cache_.empty() || f.id.empty() || !read_file(cache_ / "files" / f.id, out)) return false;
        ++stats_.cache_hits;
        return true;
    }

    void cache_put(const hub_file & f, const std::string & bytes) {
        if (!f.id.empty()) write_cache(cache_ / "files" / f.id, bytes);
    }

    // Written to a temporary name, then renamed: a run cut short never leaves half a file under the final name.
    void write_cache(const fs::path & p, const std::string & bytes) {
        if (cache_.empty()) return;
        std::error_code ec;
        fs::create_directories(p.parent_path(), ec);
        const fs::path tmp = p.string() + fmt::format(".tmp{}", ::getpid());
        {
            std::ofstream out(tmp, std::ios::binary);
            out << bytes;
            if (!out) ec = std::make_error_code(std::errc::io_error);
        }
        if (!ec) fs::rename(tmp, p, ec);
        if (ec && !cache_warned_) {
            cache_warned_ = true;
            warn_.push_back(fmt::format("cache: cannot write {}: {}", p.string(), ec.message()));
        }
    }
};

// --- picking GGUF files ------------------------------------------------------------------------------------------

// compiled at the first use (a std::regex at namespace scope is compiled at every process start)
const std::regex & split_name() {
    static const std::regex r(R"((.*)-(\d{5})-of-(\d{5})\.gguf)", std::regex::icase);
    return r;
}

bool is_gguf(const hub_file & f) { return upper(f.path).ends_with(".GGUF"); }
bool is_mmproj(const hub_file & f) { return upper(fs::path(f.path).filename().string()).starts_with("MMPROJ"); }

// The model a GGUF file belongs to: its path, or for a shard the path without "-00002-of-00003.gguf".
std::string model_key(const std::string & path) {
    std::smatch m;
    return std::regex_match(path, m, split_name()) ? m[1].str() : path;
}

// `quant` in the path, not inside a longer name: Q4_K matches neither Q4_K_M nor IQ4_K.
bool names_quant(const std::string & path, const std::string & quant) {
    const std::string p = upper(path), q = upper(quant);
    for (size_t at = p.find(q); at != std::string::npos; at = p.find(q, at + 1)) {
        const size_t end = at + q.size();
        const bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(p[at - 1]));
        const bool right = end == p.size() || (!std::isalnum(static_cast<unsigned char>(p[end])) && p[end] != '_');
        if (left && right) return true;
    }
    return false;
}

// All shards of the model `key` (one file when not split), in order; throws when a shard is missing.
std::vector<hub_file> shards_of(const std::vector<hub_file> & files, const hub_file & any, const std::string & label) {
    std::smatch m;
    if (!std::regex_match(any.path, m, split_name())) return {any};
    const uint32_t count = uint32_t(std::stoul(m[3].str()));
    std::vector<hub_file> out;
    for (uint32_t no = 1; no <= count; ++no) {
        const std::string want = fmt::format("{}-{:05}-of-{:05}.gguf", m[1].str(), no, count);
        const auto it = std::find_if(files.begin(), files.end(), [&](const hub_file & f) { return upper(f.path) == upper(want); });
        if (it == files.end()) throw error::at(label, fmt::format("missing shard {} of {} ({})", no, count, want));
        out.push_back(*it);
    }
    return out;
}

std::vector<hub_file> pick_gguf(const std::vector<hub_file> & files, const std::string & selector, const std::string & label,
                                warnings & warn) {
    std::vector<hub_file> models; // one file per model: a single file or a first shard
    std::string names;
    for (const auto & f : files) {
        if (!is_gguf(f)) continue;
        if (upper(f.path) == upper(selector) || (upper(selector).ends_with(".GGUF") && fs::path(f.path).filename() == selector)) {
            return shards_of(files, f, label);
        }
        if (is_mmproj(f) || std::any_of(models.begin(), models.end(), [&](const hub_file & g) { return model_key(g.path) == model_key(f.path); })) continue;
        models.push_back(f);
        names += (names.empty() ? "" : ", ") + f.path;
    }
    if (models.empty()) throw error::at(label, "no .gguf file in the repository");
    if (upper(selector).ends_with(".GGUF")) throw error::at(label, fmt::format("no file '{}' (GGUF files: {})", selector, names));
    std::vector<hub_file> hits;
    const std::string quant = selector.empty() && models.size() > 1 ? "Q4_K_M" : selector; // llama.cpp -hf's default
    for (const auto & f : models) {
        if (quant.empty() || names_quant(f.path, quant)) hits.push_back(f);
    }
    if (hits.empty()) {
        throw error::at(label, fmt::format("no GGUF file named with {}{} (GGUF files: {})", quant,
                                           selector.empty() ? " (the default when several exist; name one: hf:org/name:QUANT)" : "", names));
    }
    std::stable_sort(hits.begin(), hits.end(), [](const hub_file & a, const hub_file & b) { return a.path.size() < b.path.size(); });
    if (hits.size() > 1) {
        std::string others;
        for (size_t i = 1; i < hits.size(); ++i) others += (i > 1 ? ", " : "") + hits[i].path;
        warn.push_back(fmt::format("{}: {} matches several files; read {} (others: {}; name the file to choose)", label,
                                   quant, hits[0].path, others));
    }
    return shards_of(files, hits[0], label);
}

const hub_file * find_file(const std::vector<hub_file> & files, std::string_view path) {
    const auto it = std::find_if(files.begin(), files.end(), [&](const hub_file & f) { return f.path == path; });
    return it == files.end() ? nullptr : &*it;
}

// The repository from a hub cache snapshot (local.h) when it holds what `s` asks for; std::nullopt otherwise (the
// network, or kvfit's own cache, answers then). The files are picked as from the listing (pick_gguf), so the model
// is the one the same files give when fetched.
std::optional<model_desc> from_hub_cache(std::string_view spec, const hf_spec & s, const remote_options & o, warnings & warn,
                                         remote_stats & stats) {
    const std::string snap = hf_cache_snapshot(o.hub_cache, s.repo, s.revision);
    if (snap.empty()) return std::nullopt;
    std::vector<hub_file> files;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(snap, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code e2;
        if (!fs::is_regular_file(it->path(), e2)) continue;
        files.push_back({it->path().lexically_relative(snap).generic_string(), fs::file_size(it->path(), e2), ""});
    }
    const std::string label = "hf:" + s.repo + (s.revision == "main" ? "" : "@" + s.revision);
    const bool has_index = find_file(files, "model.safetensors.index.json") != nullptr;
    const bool has_st = has_index || find_file(files, "model.safetensors");
    const bool has_gguf = std::any_of(files.begin(), files.end(), is_gguf);
    auto found = [&](const std::string & what) {
        ++stats.cache_hits;
        stats.log.push_back(fmt::format("hub cache {}: {}", snap, what));
    };
    if (!s.selector.empty() || (has_gguf && !has_st)) {
        if (!has_gguf) return std::nullopt;
        std::vector<hub_file> picked;
        warnings pick_warn;
        try {
            picked = pick_gguf(files, s.selector, label, pick_warn);
        } catch (const error &) {
            return std::nullopt; // not the file asked for: the Hub may hold it
        }
        warn.insert(warn.end(), pick_warn.begin(), pick_warn.end());
        found(picked.front().path);
        model_desc m = model_from_gguf((fs::path(snap) / picked.front().path).string(), warn);
        m.source = std::string(spec);
        return m;
    }
    if (!find_file(files, "config.json") || !has_st) return std::nullopt;
    if (has_index) { // every shard the index names must be there, else the Hub has the rest
        const std::string text = [&] {
            std::ifstream in(fs::path(snap) / "model.safetensors.index.json", std::ios::binary);
            std::ostringstream ss;
            ss << in.rdbuf();
            return ss.str();
        }();
        for (const auto & name : safetensors_index_shards(text, label + "/model.safetensors.index.json")) {
            if (!find_file(files, name)) return std::nullopt;
        }
    }
    found("config.json and safetensors");
    model_desc m = load_model(snap, warn);
    m.name = s.repo;
    m.source = std::string(spec);
    return m;
}

} // namespace

std::vector<hub_file> detail::parse_hub_listing(std::string_view text, const std::string & label) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_array()) throw error::at(label, "file listing: expected a JSON array");
    // A field of the wrong type is "absent": json::value() would throw nlohmann's own exception for it.
    auto text_of = [](const nlohmann::json & o, const char * key) -> std::string {
        const auto it = o.find(key);
        return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    std::vector<hub_file> out;
    for (const auto & e : j) {
        if (!e.is_object() || text_of(e, "type") != "file") continue;
        hub_file f;
        f.path = text_of(e, "path");
        if (!valid_name(f.path, "/+ ")) continue;
        const auto lfs = e.find("lfs");
        const nlohmann::json & src = lfs != e.end() && lfs->is_object() ? *lfs : e;
        if (const auto size = src.find("size"); size != src.end() && size->is_number_unsigned()) f.size = size->get<uint64_t>();
        std::string id = text_of(src, "oid");
        if (id.empty()) id = text_of(e, "oid");
        if (valid_name(id, "") && id.size() <= 128) f.id = id;
        out.push_back(std::move(f));
    }
    return out;
}

hf_spec parse_hf_spec(std::string_view spec) {
    static const std::regex re(R"(hf:([^/@:]+)/([^/@:]+)(@[^:]+)?(:.+)?)");
    const std::string text(spec);
    std::smatch m;
    if (!std::regex_match(text, m, re)) throw error::at(spec, "expected hf:org/name[@revision][:file.gguf|:QUANT]");
    hf_spec s;
    if (!valid_name(m[1].str(), "") || !valid_name(m[2].str(), "")) {
        throw error::at(spec, "repository names hold only letters, digits, '-', '_' and '.'");
    }
    s.repo = m[1].str() + "/" + m[2].str();
    if (m[3].matched) s.revision = m[3].str().substr(1);
    if (!valid_name(s.revision, "/")) throw error::at(spec, fmt::format("revision '{}': unexpected characters", s.revision));
    if (m[4].matched) s.selector = m[4].str().substr(1);
    if (!s.selector.empty() && !valid_name(s.selector, "/+ ")) throw error::at(spec, fmt::format("file or quantization '{}': unexpected characters", s.selector));
    return s;
}

std::string default_cache_dir() {
    if (const std::string d = detail::env_str("KVFIT_CACHE"); !d.empty()) return d;
    if (const std::string d = detail::env_str("XDG_CACHE_HOME"); !d.empty()) return (fs::path(d) / "kvfit").string();
    if (const std::string d = detail::env_str("HOME"); !d.empty()) return (fs::path(d) / ".cache" / "kvfit").string();
    return "";
}

remote_options remote_options_from_env() {
    remote_options o;
    if (std::string e = detail::env_str("HF_ENDPOINT"); !e.empty()) {
        while (e.ends_with('/')) e.pop_back();
        o.endpoint = e;
    }
    o.token = detail::env_str("HF_TOKEN");
    if (const std::string t = detail::env_str("KVFIT_HTTP_TIMEOUT"); !t.empty()) {
        long s = 0;
        const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), s);
        if (ec != std::errc() || end != t.data() + t.size() || s < 1 || s > 600) {
            throw error(fmt::format("KVFIT_HTTP_TIMEOUT '{}': expected whole seconds from 1 to 600", t.substr(0, 40)));
        }
        o.silence_timeout_s = s;
    }
    o.cache_dir = default_cache_dir();
    o.hub_cache = local_roots_from_env().hf_hub;
    return o;
}

model_desc model_from_hf(std::string_view spec, const remote_options & o, warnings & warn, remote_stats * stats) {
    const hf_spec s = parse_hf_spec(spec);
    remote_stats own;
    if (auto m = from_hub_cache(spec, s, o, warn, stats ? *stats : own)) return std::move(*m);
    hub h(o, s, stats ? *stats : own, warn);
    const std::vector<hub_file> files = h.listing();
    const bool has_st = find_file(files, "model.safetensors") || find_file(files, "model.safetensors.index.json");
    const bool has_gguf = std::any_of(files.begin(), files.end(), is_gguf);
    const hub_file * cfg = find_file(files, "config.json");
    if (!s.selector.empty() || (has_gguf && !has_st)) {
        std::vector<gguf_file> shards;
        for (const auto & f : pick_gguf(files, s.selector, h.label(), warn)) shards.push_back(h.gguf(f));
        model_desc m = model_from_gguf(shards, warn);
        m.source = std::string(spec);
        return m;
    }
    if (!cfg) throw error::at(h.label(), "no config.json and no .gguf file in the repository");
    const std::string config = h.whole(*cfg);
    model_desc m = model_from_hf_config(config, h.where(*cfg), warn);
    m.name = s.repo;
    m.source = std::string(spec);
    std::vector<safetensors_file> shards;
    if (const hub_file * index = find_file(files, "model.safetensors.index.json")) {
        const std::string text = h.whole(*index);
        for (const auto & name : safetensors_index_shards(text, h.where(*index))) {
            const hub_file * f = find_file(files, name);
            if (!f) throw error::at(h.where(*index), fmt::format("shard {} is not in the repository", name));
            shards.push_back(h.safetensors(*f));
        }
        safetensors_check_index(text, h.where(*index), shards);
    } else if (const hub_file * f = find_file(files, "model.safetensors")) {
        shards.push_back(h.safetensors(*f));
    }
    if (shards.empty()) {
        warn.push_back(h.label() + ": no safetensors in the repository: weights are estimated from config.json's shapes");
    } else {
        apply_safetensors_weights(m, shards, config, h.label(), warn);
    }
    return m;
}

} // namespace kvfit
