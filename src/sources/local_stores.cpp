// Models on disk where Ollama, huggingface_hub, llama.cpp and LM Studio keep them (include/kvfit/local.h). Reads
// manifests, refs and directory listings, then hands the GGUF or config.json to the sources; never the network.
#include "kvfit/local.h"

#include "kvfit/error.h"
#include "kvfit/gguf.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include "core/util.h"

namespace kvfit {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t k_max_manifest_bytes = 4ull << 20; // a manifest is a few hundred bytes
constexpr uint64_t k_max_ref_bytes = 4096;            // a ref holds one commit id
constexpr const char * k_model_type = "application/vnd.ollama.image.model";
constexpr const char * k_projector_type = "application/vnd.ollama.image.projector";
constexpr const char * k_adapter_type = "application/vnd.ollama.image.adapter";



// A small text file, whole; throws "<where>: ..." above `cap` bytes.
std::string read_small(const fs::path & p, uint64_t cap, const std::string & where) {
    std::error_code ec;
    const uint64_t size = fs::file_size(p, ec);
    if (ec) throw error::at(where, fmt::format("cannot read {}: {}", p.string(), ec.message()));
    if (size > cap) throw error::at(where, fmt::format("{}: {} bytes exceeds the limit of {} bytes", p.string(), size, cap));
    std::ifstream in(p, std::ios::binary);
    if (!in) throw error::at(where, fmt::format("cannot open {}", p.string()));
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool is_dir(const fs::path & p) {
    std::error_code ec;
    return fs::is_directory(p, ec);
}

bool is_file(const fs::path & p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec); // follows the snapshot's links into blobs/
}

uint64_t size_of(const fs::path & p) {
    std::error_code ec;
    const uint64_t n = fs::file_size(p, ec);
    return ec ? 0 : n;
}

// Ollama's partRE (types/model/name.go): a letter or digit, then [A-Za-z0-9._-].
bool valid_part(std::string_view s, size_t max) {
    if (s.empty() || s.size() > max || !std::isalnum(static_cast<unsigned char>(s[0]))) return false;
    return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '.' || c == '_' || c == '-'; });
}

// hostRE: [A-Za-z0-9.-]+ with an optional :port.
bool valid_host(std::string_view s) {
    static const std::regex re(R"([A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]+)?)");
    return s.size() <= 350 && std::regex_match(std::string(s), re);
}

const std::regex & digest_re() {
    static const std::regex re("sha256[:-]([0-9a-f]{64})");
    return re;
}

// The split-GGUF naming llama.cpp uses (llama_split_path): <prefix>-00001-of-00003.gguf.
const std::regex & split_re() {
    static const std::regex re(R"((.*)-(\d{5})-of-(\d{5})\.gguf)", std::regex::icase);
    return re;
}

bool is_gguf_name(const std::string & name) { return detail::ascii_lower(name).ends_with(".gguf"); }

// A model GGUF as listings show it: not a projector, and the first shard of a split model.
bool is_model_gguf(const fs::path & p) {
    const std::string name = p.filename().string();
    if (!is_gguf_name(name) || detail::ascii_lower(name).starts_with("mmproj")) return false;
    std::smatch m;
    return !std::regex_match(name, m, split_re()) || m[2].str() == "00001";
}

// Bytes of a GGUF and its sibling shards.
uint64_t gguf_bytes(const fs::path & p) {
    const std::string name = p.filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, split_re())) return size_of(p);
    uint64_t n = 0;
    const unsigned count = unsigned(std::stoul(m[3].str()));
    for (unsigned no = 1; no <= count; ++no) n += size_of(p.parent_path() / fmt::format("{}-{:05}-of-{:05}.gguf", m[1].str(), no, count));
    return n;
}

ollama_layer read_layer(const nlohmann::json & l, size_t i, const fs::path & root, const std::string & where) {
    if (!l.is_object() || !l.contains("mediaType") || !l["mediaType"].is_string() || !l.contains("digest") ||
        !l["digest"].is_string() || !l.contains("size") || !l["size"].is_number_unsigned()) {
        throw error::at(where, fmt::format("layers[{}]: expected {{\"mediaType\", \"digest\", \"size\"}}", i));
    }
    ollama_layer out;
    out.media_type = l["mediaType"].get<std::string>();
    out.digest = l["digest"].get<std::string>();
    out.size = l["size"].get<uint64_t>();
    std::smatch m;
    if (!std::regex_match(out.digest, m, digest_re())) {
        throw error::at(where, fmt::format("layers[{}]: digest '{}' is not sha256:<64 hex digits>", i, out.digest.substr(0, 80)));
    }
    out.path = (root / "blobs" / ("sha256-" + m[1].str())).string(); // server/images.go GetBlobsPath: ':' -> '-'
    return out;
}

void check_blob(const ollama_layer & l, const std::string & where, const std::string & spec_name) {
    std::error_code ec;
    if (!fs::exists(l.path, ec)) {
        throw error::at(where, fmt::format("blob {} is missing (an interrupted pull? run: ollama pull {})",
                                           fs::path(l.path).filename().string(), spec_name));
    }
    if (!is_file(l.path)) throw error::at(where, fmt::format("blob {} is not a regular file", l.path));
    const uint64_t size = size_of(l.path);
    if (size != l.size) {
        throw error::at(where, fmt::format("blob {} holds {} bytes, the manifest says {} (an interrupted pull? run: "
                                           "ollama pull {})", fs::path(l.path).filename().string(), size, l.size, spec_name));
    }
}

// The commit a ref names, or "" when the ref is absent or not a commit id.
std::string read_ref(const fs::path & repo_dir, std::string_view revision) {
    static const std::regex commit_re("[0-9a-f]{40}");
    const fs::path ref = repo_dir / "refs" / std::string(revision);
    if (revision.find("..") == std::string_view::npos && is_file(ref)) {
        std::string text = read_small(ref, k_max_ref_bytes, ref.string());
        while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
        if (std::regex_match(text, commit_re)) return text;
        return "";
    }
    const std::string rev(revision);
    return std::regex_match(rev, commit_re) ? rev : "";
}

void add_hub_root(std::vector<local_model> & out, const fs::path & root, std::set<std::string> & seen) {
    std::error_code ec;
    if (!is_dir(root)) return;
    for (const auto & repo : fs::directory_iterator(root, ec)) {
        const std::string folder = repo.path().filename().string();
        if (!folder.starts_with("models--") || !is_dir(repo.path())) continue;
        std::string id = folder.substr(8); // models--org--name -> org/name (llama.cpp hf-cache.cpp folder_name_to_repo)
        const size_t sep = id.find("--");
        if (sep == std::string::npos) continue;
        id = id.substr(0, sep) + "/" + id.substr(sep + 2);
        std::vector<std::pair<std::string, std::string>> revs; // revision, commit: main first
        if (const std::string c = read_ref(repo.path(), "main"); !c.empty()) revs.emplace_back("main", c);
        std::error_code ec2;
        if (is_dir(repo.path() / "refs")) {
            for (const auto & r : fs::directory_iterator(repo.path() / "refs", ec2)) {
                const std::string name = r.path().filename().string();
                if (name == "main" || !is_file(r.path())) continue;
                try {
                    if (const std::string c = read_ref(repo.path(), name); !c.empty()) revs.emplace_back(name, c);
                } catch (const error &) {
                }
            }
        }
        for (const auto & [rev, commit] : revs) {
            const fs::path snap = repo.path() / "snapshots" / commit;
            if (!is_dir(snap) || !seen.insert(fs::weakly_canonical(snap, ec2).string()).second) continue;
            const std::string base = "hf:" + id + (rev == "main" ? "" : "@" + rev);
            const bool index = is_file(snap / "model.safetensors.index.json"), single = is_file(snap / "model.safetensors");
            if (is_file(snap / "config.json") && (index || single)) {
                uint64_t bytes = 0;
                for (const auto & f : fs::directory_iterator(snap, ec2)) {
                    if (f.path().extension() == ".safetensors") bytes += size_of(f.path());
                }
                out.push_back({base, "hf-cache", snap.string(), bytes});
            }
            std::vector<local_model> ggufs;
            for (auto it = fs::recursive_directory_iterator(snap, ec2); !ec2 && it != fs::recursive_directory_iterator(); it.increment(ec2)) {
                if (!is_file(it->path()) || !is_model_gguf(it->path())) continue;
                const std::string rel = it->path().lexically_relative(snap).generic_string();
                ggufs.push_back({base + ":" + rel, "hf-cache", it->path().string(), gguf_bytes(it->path())});
            }
            std::sort(ggufs.begin(), ggufs.end(), [](const auto & a, const auto & b) { return a.spec < b.spec; });
            out.insert(out.end(), ggufs.begin(), ggufs.end());
        }
    }
}

void add_flat_ggufs(std::vector<local_model> & out, const fs::path & dir, int depth, const std::string & store,
                    std::set<std::string> & seen) {
    std::error_code ec;
    if (!is_dir(dir)) return;
    std::vector<local_model> found;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it.depth() > depth) {
            it.disable_recursion_pending();
            continue;
        }
        if (it->path().filename().string().starts_with("models--")) { // a hub layout inside: listed as such
            it.disable_recursion_pending();
            continue;
        }
        if (!is_file(it->path()) || !is_model_gguf(it->path())) continue;
        std::error_code e2;
        if (!seen.insert(fs::weakly_canonical(it->path(), e2).string()).second) continue;
        found.push_back({it->path().string(), store, it->path().string(), gguf_bytes(it->path())});
    }
    std::sort(found.begin(), found.end(), [](const auto & a, const auto & b) { return a.spec < b.spec; });
    out.insert(out.end(), found.begin(), found.end());
}

} // namespace

local_roots local_roots_from_env() {
    local_roots r;
    const std::string home = detail::env_str("HOME"), xdg = detail::env_str("XDG_CACHE_HOME");
    if (const std::string d = detail::env_str("OLLAMA_MODELS"); !d.empty()) r.ollama = d;
    else if (!home.empty()) r.ollama = (fs::path(home) / ".ollama" / "models").string();
    // huggingface_hub constants.py: HF_HUB_CACHE, else HF_HOME/hub, HF_HOME defaulting to XDG_CACHE_HOME/huggingface
    if (const std::string d = detail::env_str("HF_HUB_CACHE"); !d.empty()) r.hf_hub.push_back(d);
    else if (const std::string h = detail::env_str("HF_HOME"); !h.empty()) r.hf_hub.push_back((fs::path(h) / "hub").string());
    else if (!xdg.empty()) r.hf_hub.push_back((fs::path(xdg) / "huggingface" / "hub").string());
    else if (!home.empty()) r.hf_hub.push_back((fs::path(home) / ".cache" / "huggingface" / "hub").string());
    // llama.cpp: LLAMA_CACHE is the root of its hub-layout cache (common/hf-cache.cpp) and its flat cache directory
    // (common/common.cpp fs_get_cache_directory), else XDG_CACHE_HOME/llama.cpp, else ~/.cache/llama.cpp
    if (const std::string d = detail::env_str("LLAMA_CACHE"); !d.empty()) {
        r.hf_hub.push_back(d);
        r.llamacpp.push_back(d);
    } else if (!xdg.empty()) {
        r.llamacpp.push_back((fs::path(xdg) / "llama.cpp").string());
    } else if (!home.empty()) {
        r.llamacpp.push_back((fs::path(home) / ".cache" / "llama.cpp").string());
    }
    if (!home.empty()) {
        r.lmstudio.push_back((fs::path(home) / ".lmstudio" / "models").string());
        r.lmstudio.push_back((fs::path(home) / ".cache" / "lm-studio" / "models").string());
    }
    return r;
}

std::string ollama_name::display() const {
    std::string out;
    if (host != "registry.ollama.ai") out += host + "/";
    if (ns != "library" || host != "registry.ollama.ai") out += ns + "/";
    return out + model + ":" + tag;
}

ollama_name parse_ollama_name(std::string_view spec) {
    std::string text(spec);
    if (text.starts_with("ollama:")) text = text.substr(7);
    const std::string where = "ollama:" + text;
    if (text.empty()) throw error::at(where, "expected ollama:NAME[:TAG] (the names `ollama list` shows)");
    ollama_name n;
    const size_t slash = text.rfind('/');
    const size_t colon = text.rfind(':');
    if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
        n.tag = text.substr(colon + 1);
        text = text.substr(0, colon);
    }
    std::vector<std::string> parts;
    for (size_t at = 0; at <= text.size();) {
        const size_t end = std::min(text.find('/', at), text.size());
        parts.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    if (parts.size() > 3) throw error::at(where, "expected at most host/namespace/model:tag");
    n.model = parts.back();
    if (parts.size() >= 2) n.ns = parts[parts.size() - 2];
    if (parts.size() == 3) n.host = parts[0];
    if (!valid_part(n.model, 80)) throw error::at(where, fmt::format("model name '{}': expected [A-Za-z0-9._-], starting with a letter or digit, at most 80 characters", n.model));
    if (!valid_part(n.ns, 80)) throw error::at(where, fmt::format("namespace '{}': expected [A-Za-z0-9._-], starting with a letter or digit, at most 80 characters", n.ns));
    if (!valid_part(n.tag, 80)) throw error::at(where, fmt::format("tag '{}': expected [A-Za-z0-9._-], starting with a letter or digit, at most 80 characters", n.tag));
    if (!valid_host(n.host)) throw error::at(where, fmt::format("host '{}': expected a host name with an optional :port", n.host));
    return n;
}

ollama_model resolve_ollama(const ollama_name & name, const std::string & root_text) {
    const std::string where = "ollama:" + name.display();
    if (root_text.empty()) throw error::at(where, "no Ollama models directory (set OLLAMA_MODELS or HOME)");
    const fs::path root(root_text);
    fs::path manifest = root / "manifests" / name.host / name.ns / name.model / name.tag;
    if (!is_file(manifest)) { // older Ollama wrote lower-case paths
        const fs::path low = root / "manifests" / detail::ascii_lower(name.host) / detail::ascii_lower(name.ns) / detail::ascii_lower(name.model) / detail::ascii_lower(name.tag);
        if (is_file(low)) manifest = low;
    }
    if (!is_file(manifest)) {
        std::string present;
        int n = 0;
        local_roots only;
        only.ollama = root_text;
        for (const auto & l : find_local_models(only)) {
            if (++n <= 8) present += (present.empty() ? "" : ", ") + l.spec.substr(7);
        }
        throw error::at(where, fmt::format("no manifest {} ({})", manifest.string(),
                                           present.empty() ? "no Ollama models in " + root_text : "present: " + present + (n > 8 ? ", ..." : "")));
    }
    const std::string text = read_small(manifest, k_max_manifest_bytes, where);
    const auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) throw error::at(where, fmt::format("manifest {} is not valid JSON", manifest.string()));
    if (!j.is_object() || !j.contains("layers") || !j["layers"].is_array()) {
        throw error::at(where, fmt::format("manifest {}: expected an object with a \"layers\" array", manifest.string()));
    }
    ollama_model out;
    out.name = name;
    out.manifest_path = manifest.string();
    bool have_model = false;
    std::vector<std::string> types;
    const auto & layers = j["layers"];
    for (size_t i = 0; i < layers.size(); ++i) {
        const ollama_layer l = read_layer(layers[i], i, root, where);
        types.push_back(l.media_type);
        if (l.media_type == k_model_type) {
            if (have_model) throw error::at(where, "manifest names two model layers");
            out.model = l;
            have_model = true;
        } else if (l.media_type == k_projector_type) {
            out.projectors.push_back(l);
        } else if (l.media_type == k_adapter_type) {
            out.adapters.push_back(l);
        }
    }
    if (!have_model) {
        const bool tensors = std::any_of(types.begin(), types.end(), [](const std::string & t) {
            return t.starts_with("application/vnd.ollama.image.tensor");
        });
        throw error::at(where, tensors ? "no GGUF model layer: the model is stored as tensor layers (a safetensors "
                                         "import), which kvfit does not read"
                                       : fmt::format("no layer of mediaType {}", k_model_type));
    }
    check_blob(out.model, where, name.display());
    for (const auto & l : out.projectors) check_blob(l, where, name.display());
    for (const auto & l : out.adapters) check_blob(l, where, name.display());
    return out;
}

model_desc model_from_ollama(std::string_view spec, const local_roots & roots, warnings & warn) {
    const ollama_name n = parse_ollama_name(spec);
    const ollama_model om = resolve_ollama(n, roots.ollama);
    model_desc m = model_from_gguf(om.model.path, warn);
    const std::string where = "ollama:" + n.display();
    auto extra = [&](const ollama_layer & l, const char * what, const char * flag) {
        (void)gguf_open_shards(l.path); // a projector or adapter that is no GGUF is the manifest's error
        warn.push_back(fmt::format("{}: {} {} ({} bytes) is loaded beside the model ({}) and is not in this plan{}", where,
                                   what, fs::path(l.path).filename().string(), l.size, flag,
                                   std::string_view(what) == "projector" ? "; --runtime ollama counts it with --mmproj-size" : ""));
    };
    for (const auto & l : om.projectors) extra(l, "projector", "llama-server --mmproj");
    for (const auto & l : om.adapters) extra(l, "adapter", "llama-server --lora");
    m.name = n.display();
    m.source = where;
    return m;
}

std::string hf_cache_snapshot(const std::vector<std::string> & hub_roots, std::string_view repo, std::string_view revision) {
    std::string folder = "models--" + std::string(repo);
    for (size_t at = folder.find('/'); at != std::string::npos; at = folder.find('/', at + 2)) folder.replace(at, 1, "--");
    for (const auto & root : hub_roots) {
        const fs::path dir = fs::path(root) / folder;
        if (!is_dir(dir)) continue;
        try {
            const std::string commit = read_ref(dir, revision);
            if (!commit.empty() && is_dir(dir / "snapshots" / commit)) return (dir / "snapshots" / commit).string();
        } catch (const error &) {
        }
    }
    return "";
}

std::vector<local_model> find_local_models(const local_roots & roots) {
    std::vector<local_model> out;
    std::error_code ec;
    if (!roots.ollama.empty() && is_dir(fs::path(roots.ollama) / "manifests")) {
        std::vector<local_model> found;
        const fs::path base = fs::path(roots.ollama) / "manifests";
        for (auto it = fs::recursive_directory_iterator(base, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
            if (it.depth() != 3 || !is_file(it->path())) continue;
            const fs::path rel = it->path().lexically_relative(base);
            std::vector<std::string> p;
            for (const auto & part : rel) p.push_back(part.string());
            ollama_name n;
            n.host = p[0];
            n.ns = p[1];
            n.model = p[2];
            n.tag = p[3];
            local_model l{"ollama:" + n.display(), "ollama", it->path().string(), 0};
            try {
                const ollama_model om = resolve_ollama(n, roots.ollama);
                l.path = om.model.path;
                l.bytes = om.model.size;
            } catch (const error &) {
                // listed with the manifest's path: --list --local shows the error on its row
            }
            found.push_back(std::move(l));
        }
        std::sort(found.begin(), found.end(), [](const auto & a, const auto & b) { return a.spec < b.spec; });
        out.insert(out.end(), found.begin(), found.end());
    }
    std::set<std::string> seen;
    for (const auto & r : roots.hf_hub) add_hub_root(out, r, seen);
    for (const auto & r : roots.llamacpp) add_flat_ggufs(out, r, 0, "llama.cpp", seen);
    for (const auto & r : roots.lmstudio) add_flat_ggufs(out, r, 2, "lm-studio", seen);
    return out;
}

model_desc load_local_model(const local_model & l, const local_roots & roots, warnings & warn) {
    if (l.store == "ollama") return model_from_ollama(l.spec, roots, warn);
    model_desc m = load_model(l.path, warn);
    if (l.spec.starts_with("hf:")) {
        m.source = l.spec;
        if (is_dir(l.path)) m.name = l.spec.substr(3);
    }
    return m;
}

} // namespace kvfit
