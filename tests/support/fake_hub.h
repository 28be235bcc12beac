// A Hub-shaped server on 127.0.0.1 for the remote tests (test_remote.cpp): the listing API
// (/api/models/<org>/<name>/tree/<rev>, paged with Link: rel="next"), /<org>/<name>/resolve/<rev>/<file> with Range,
// gated (401 without "Bearer secret") and forbidden (403) repositories, LFS files redirected to a second loopback
// server (the "CDN"), and a server that ignores Range. Every file is also written, sparse, to a local directory,
// so a test can compare the remote model with the local one.
#pragma once
#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "kvfit/gguf_writer.h"
#include "kvfit/remote.h"
#include "kvfit/sources.h"

#include "support/gguf_fixture.h"
#include "support/http_server.h"
#include "support/st_fixture.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>

namespace kvfit::test {

/// A file on the fake Hub: its first bytes, then zeros up to `size` (tensor data is never asked for).
struct blob {
    std::string head;
    uint64_t size = 0;
    std::string git_oid, sha256;
    bool lfs = false;
};

struct repo {
    std::map<std::string, blob> files;
    bool gated = false;     // needs "Authorization: Bearer secret"
    bool forbidden = false; // 403 to any token
    bool cdn = false;       // LFS files redirect to the CDN server
    bool no_range = false;  // resolve ignores Range: 200 with the whole file
    int slow_ms = 0;        // resolve sends its body in 64 KiB pieces this many ms apart (a slow link)
    size_t page = 0;        // listing entries per page (0: one page)
};

inline std::string bytes_of(const blob & b, uint64_t first, uint64_t last) {
    std::string out(last - first + 1, '\0');
    if (first < b.head.size()) b.head.copy(out.data(), std::min<uint64_t>(b.head.size(), last + 1) - first, first);
    return out;
}

inline http_reply serve(const blob & b, const http_request & r, bool ranges) {
    const auto it = r.headers.find("range");
    if (!ranges || it == r.headers.end()) return {200, {}, bytes_of(b, 0, b.size - 1)};
    uint64_t first = 0, last = 0;
    if (std::sscanf(it->second.c_str(), "bytes=%lu-%lu", &first, &last) != 2 || first >= b.size) return {416, {}, ""};
    last = std::min(last, b.size - 1);
    return {206, {{"Content-Range", fmt::format("bytes {}-{}/{}", first, last, b.size)}}, bytes_of(b, first, last)};
}

class fake_hub {
public:
    std::map<std::string, repo> repos;
    kvfit::test::http_server cdn{[this](const http_request & r) { return on_cdn(r); }};
    kvfit::test::http_server hub{[this](const http_request & r) { return on_hub(r); }};

    /// Put a file in `repo_name` and the same bytes (sparse) in `dir`.
    void put(const std::string & repo_name, const std::string & dir, const std::string & path, std::string head, uint64_t size) {
        static int n = 0;
        blob b{std::move(head), size, fmt::format("{:040x}", ++n), fmt::format("{:064x}", n), false};
        b.lfs = path.ends_with(".safetensors") || path.ends_with(".gguf");
        std::filesystem::create_directories(std::filesystem::path(dir + "/" + path).parent_path());
        const int fd = ::open((dir + "/" + path).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        EXPECT_EQ(::write(fd, b.head.data(), std::min<uint64_t>(b.head.size(), size)), ssize_t(std::min<uint64_t>(b.head.size(), size)));
        EXPECT_EQ(::ftruncate(fd, off_t(size)), 0);
        ::close(fd);
        repos[repo_name].files[path] = std::move(b);
    }
    void put_text(const std::string & repo_name, const std::string & dir, const std::string & path, const std::string & text) {
        put(repo_name, dir, path, text, text.size());
    }

private:
    std::optional<http_reply> refuse(const repo & rp, const http_request & r) const {
        const auto auth = r.headers.find("authorization");
        if (rp.forbidden) return http_reply{auth == r.headers.end() ? 401 : 403, {}, "{\"error\": \"no\"}"};
        if (rp.gated && (auth == r.headers.end() || auth->second != "Bearer secret")) return http_reply{401, {}, "{\"error\": \"gated\"}"};
        return std::nullopt;
    }

    http_reply listing(const repo & rp, const http_request & r) const {
        std::vector<nlohmann::json> all{{{"type", "directory"}, {"path", "docs"}, {"oid", "0"}, {"size", 0}}};
        for (const auto & [path, b] : rp.files) {
            nlohmann::json e = {{"type", "file"}, {"path", path}, {"oid", b.git_oid}, {"size", b.lfs ? 134 : b.size}};
            if (b.lfs) e["lfs"] = {{"oid", b.sha256}, {"size", b.size}, {"pointerSize", 134}};
            all.push_back(e);
        }
        const size_t page = rp.page == 0 ? all.size() : rp.page;
        const size_t start = r.query.find("cursor=") == std::string::npos ? 0 : std::stoul(r.query.substr(r.query.find("cursor=") + 7));
        nlohmann::json out = nlohmann::json::array();
        for (size_t i = start; i < all.size() && i < start + page; ++i) out.push_back(all[i]);
        http_reply reply{200, {{"Content-Type", "application/json"}}, out.dump()};
        if (start + page < all.size()) {
            reply.headers.push_back({"Link", fmt::format("<{}{}?recursive=true&cursor={}>; rel=\"next\"", hub.origin(), r.path, start + page)});
        }
        return reply;
    }

    http_reply on_hub(const http_request & r) {
        std::vector<std::string> part;
        for (size_t at = 1; at <= r.path.size();) {
            const size_t end = std::min(r.path.find('/', at), r.path.size());
            part.push_back(r.path.substr(at, end - at));
            at = end + 1;
        }
        const bool tree = part.size() == 6 && part[0] == "api" && part[1] == "models" && part[4] == "tree";
        const bool resolve = part.size() >= 5 && part[2] == "resolve";
        if (!tree && !resolve) return {404, {}, "not found"};
        const auto rp = repos.find(tree ? part[2] + "/" + part[3] : part[0] + "/" + part[1]);
        const std::string rev = tree ? part[5] : part[3];
        if (rp == repos.end() || (rev != "main" && rev != "v1")) return {404, {}, "{\"error\": \"Repository not found\"}"};
        if (auto no = refuse(rp->second, r)) return *no;
        if (tree) return listing(rp->second, r);
        std::string path = part[4];
        for (size_t i = 5; i < part.size(); ++i) path += "/" + part[i];
        const auto f = rp->second.files.find(path);
        if (f == rp->second.files.end()) return {404, {}, "{\"error\": \"Entry not found\"}"};
        if (rp->second.cdn && f->second.lfs) {
            return {302, {{"Location", fmt::format("{}/blobs/{}?X-Amz-Signature=abc", cdn.origin(), f->second.sha256)}}, ""};
        }
        http_reply reply = serve(f->second, r, !rp->second.no_range);
        reply.chunk_delay_ms = rp->second.slow_ms;
        return reply;
    }

    http_reply on_cdn(const http_request & r) {
        for (const auto & [name, rp] : repos) {
            for (const auto & [path, b] : rp.files) {
                if (r.path == "/blobs/" + b.sha256) return serve(b, r, true);
            }
        }
        return {404, {}, ""};
    }
};

// --- fixtures ----------------------------------------------------------------------------------------------------

// A Llama checkpoint in two shards with its index and config (plus a README the loader ignores).
inline void put_llama(fake_hub & h, const std::string & name, const std::string & dir) {
    const kvfit::test::llama_shape s;
    const auto entries = kvfit::test::llama_entries(s, kvfit::test::st_linear::bf16);
    const size_t half = entries.size() / 2;
    const std::vector<kvfit::test::st_entry> a(entries.begin(), entries.begin() + long(half)), b(entries.begin() + long(half), entries.end());
    const auto wa = kvfit::test::st_writer(a), wb = kvfit::test::st_writer(b);
    h.put(name, dir, "model-00001-of-00002.safetensors", wa.header(), wa.file_bytes());
    h.put(name, dir, "model-00002-of-00002.safetensors", wb.header(), wb.file_bytes());
    h.put_text(name, dir, "model.safetensors.index.json",
               kvfit::test::st_index({{"model-00001-of-00002.safetensors", a}, {"model-00002-of-00002.safetensors", b}}));
    h.put_text(name, dir, "config.json", kvfit::test::llama_config(s));
    h.put_text(name, dir, "README.md", "# a model\n");
}

// A llama GGUF: 2 blocks, n_vocab tokens, tensors in `type`.
inline kvfit::gguf_writer gguf_llama(uint32_t n_vocab, kvfit::ggml_type type) {
    using kvfit::gguf_wvalue;
    kvfit::gguf_writer w = kvfit::test::model_writer("llama", 2, 256, n_vocab);
    w.add("llama.attention.head_count", gguf_wvalue::u32(4));
    w.add("llama.attention.head_count_kv", gguf_wvalue::u32(2));
    w.add("llama.feed_forward_length", gguf_wvalue::u32(512));
    for (int il = 0; il < 2; ++il) {
        w.add_tensor(fmt::format("blk.{}.attn_q.weight", il), type, {256, 256});
        w.add_tensor(fmt::format("blk.{}.ffn_up.weight", il), type, {256, 512});
    }
    w.add_tensor("output.weight", type, {256, n_vocab});
    return w;
}

inline void put_gguf(fake_hub & h, const std::string & name, const std::string & dir, const std::string & path, const kvfit::gguf_writer & w) {
    h.put(name, dir, path, w.header(), w.data_offset() + w.data_bytes());
}

inline void put_gguf_repo(fake_hub & h, const std::string & name, const std::string & dir) {
    using kvfit::gguf_wvalue;
    put_gguf(h, name, dir, "model-Q4_K_M.gguf", gguf_llama(512, kvfit::ggml_type::q4_k));
    // 300,000 tokens: a 2.7 MB header, longer than the first 2 MiB range
    put_gguf(h, name, dir, "model-Q8_0.gguf", gguf_llama(300000, kvfit::ggml_type::q8_0));
    put_gguf(h, name, dir, "mmproj-model-F16.gguf", gguf_llama(512, kvfit::ggml_type::f16));
    for (uint16_t no = 0; no < 2; ++no) {
        kvfit::gguf_writer w = no == 0 ? gguf_llama(512, kvfit::ggml_type::q2_k) : kvfit::gguf_writer();
        w.add("split.no", gguf_wvalue::u16(no));
        w.add("split.count", gguf_wvalue::u16(2));
        w.add("split.tensors.count", gguf_wvalue::i32(7));
        if (no == 1) w.add_tensor("output_norm.weight", kvfit::ggml_type::f32, {256});
        put_gguf(h, name, dir, fmt::format("Q2_K/model-Q2_K-{:05}-of-00002.gguf", no + 1), w);
    }
}

inline kvfit::remote_options options(const fake_hub & h, const scratch_dir & cache, std::string token = "") {
    kvfit::remote_options o;
    o.endpoint = h.hub.origin();
    o.cache_dir = cache.path.string();
    o.token = std::move(token);
    o.timeout_s = 20;
    return o;
}

inline kvfit::model_desc without_names(kvfit::model_desc m) {
    m.name.clear();
    m.source.clear();
    return m;
}

// Requests per resolved file name: "model-00001-of-00002.safetensors" -> 1.
inline std::map<std::string, int> per_file(const std::vector<http_request> & log) {
    std::map<std::string, int> n;
    for (const auto & r : log) {
        const size_t at = r.path.find("/resolve/");
        if (at == std::string::npos) continue;
        const size_t file = r.path.find('/', at + 9);
        ++n[r.path.substr(file + 1)];
    }
    return n;
}

inline uint64_t sent_bytes(const std::vector<http_request> & log) {
    uint64_t n = 0;
    for (const auto & r : log) n += r.body_bytes_sent;
    return n;
}

inline std::string error_of(const std::function<void()> & f) {
    try {
        f();
    } catch (const kvfit::error & e) {
        return e.what();
    }
    return "no error";
}

} // namespace kvfit::test
