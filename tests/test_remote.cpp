// Remote models (hf:org/name) against the loopback Hub of tests/support/fake_hub.h: the remote model equals the
// local one, with the requests and bytes asserted (each file's header in at most 2 requests), the token kept
// from the CDN, the cache and --offline, and one-line errors for 401, 403, 404, no Range and no network.
// Nothing touches the real network.
#include "support/fake_hub.h"
#include "support/run_cli.h"

#include <cstdlib>

namespace {

using namespace kvfit::test;

TEST(remote, spec_parsing) {
    const auto a = kvfit::parse_hf_spec("hf:Qwen/Qwen3-8B");
    EXPECT_EQ(a.repo, "Qwen/Qwen3-8B");
    EXPECT_EQ(a.revision, "main");
    EXPECT_EQ(a.selector, "");
    const auto b = kvfit::parse_hf_spec("hf:unsloth/Qwen3-8B-GGUF@v1.0:Q4_K_M");
    EXPECT_EQ(b.revision, "v1.0");
    EXPECT_EQ(b.selector, "Q4_K_M");
    EXPECT_EQ(kvfit::parse_hf_spec("hf:o/n:BF16/x-00001-of-00002.gguf").selector, "BF16/x-00001-of-00002.gguf");
    EXPECT_EQ(kvfit::parse_hf_spec("hf:o/n@refs/pr/1").revision, "refs/pr/1");
    for (const char * bad : {"hf:noslash", "hf:o/n/x", "hf:../n", "hf:o/n@..", "hf:o/n@a;b", "hf:o/n:a?b", "hf:o/"}) {
        EXPECT_THROW(kvfit::parse_hf_spec(bad), kvfit::error) << bad;
    }
}

// Done-when: the remote plan equals the local plan, with the request and byte counts asserted.
TEST(remote, safetensors_repo_equals_the_local_directory) {
    fake_hub h;
    scratch_dir local("rm_st_local"), cache("rm_st_cache");
    put_llama(h, "org/llama", local.path.string());
    kvfit::warnings wl, wr;
    const auto want = kvfit::load_model(local.path.string(), wl);
    kvfit::remote_stats st;
    const auto got = kvfit::model_from_hf("hf:org/llama", options(h, cache), wr, &st);
    EXPECT_EQ(without_names(got), without_names(want));
    EXPECT_TRUE(got.weights.exact);
    EXPECT_EQ(got.source, "hf:org/llama");

    // listing, config.json, the index, one 64 KiB range per shard (the README is never fetched)
    const auto log = h.hub.requests();
    ASSERT_EQ(log.size(), 5u);
    EXPECT_EQ(st.requests, 5u);
    const auto n = per_file(log);
    EXPECT_EQ(n, (std::map<std::string, int>{{"config.json", 1}, {"model.safetensors.index.json", 1},
                                             {"model-00001-of-00002.safetensors", 1}, {"model-00002-of-00002.safetensors", 1}}));
    const auto & files = h.repos["org/llama"].files;
    const uint64_t listing = log[0].body_bytes_sent;
    EXPECT_EQ(st.bytes, sent_bytes(log));
    EXPECT_EQ(st.bytes, listing + files.at("config.json").size + files.at("model.safetensors.index.json").size + 2 * 65536);
    for (const auto & r : log) {
        if (r.path.ends_with(".safetensors")) {
            EXPECT_EQ(r.headers.at("range"), "bytes=0-65535");
        }
    }

    // Again: only the listing is fetched, the rest comes from the cache (keyed by the listing's ids).
    h.hub.clear();
    kvfit::remote_stats st2;
    EXPECT_EQ(without_names(kvfit::model_from_hf("hf:org/llama", options(h, cache), wr, &st2)), without_names(want));
    EXPECT_EQ(st2.requests, 1u);
    EXPECT_EQ(st2.cache_hits, 4u);
    EXPECT_EQ(h.hub.requests().size(), 1u);

    // Offline: nothing at all.
    h.hub.clear();
    auto off = options(h, cache);
    off.offline = true;
    kvfit::remote_stats st3;
    EXPECT_EQ(without_names(kvfit::model_from_hf("hf:org/llama", off, wr, &st3)), without_names(want));
    EXPECT_EQ(st3.requests, 0u);
    EXPECT_EQ(st3.cache_hits, 5u);
    EXPECT_TRUE(h.hub.requests().empty());
}

TEST(remote, a_header_longer_than_the_first_range_takes_a_second_request) {
    fake_hub h;
    scratch_dir local("rm_big_local"), cache("rm_big_cache");
    auto entries = llama_entries({}, st_linear::bf16);
    for (int i = 0; i < 1500; ++i) entries.push_back({fmt::format("model.extra.{:04}.weight", i), kvfit::st_dtype::f32, {1}});
    const auto w = st_writer(entries);
    ASSERT_GT(w.header().size(), 65536u);
    h.put("org/big", local.path.string(), "model.safetensors", w.header(), w.file_bytes());
    h.put_text("org/big", local.path.string(), "config.json", llama_config({}));
    kvfit::warnings warn;
    kvfit::remote_stats st;
    const auto got = kvfit::model_from_hf("hf:org/big", options(h, cache), warn, &st);
    EXPECT_EQ(without_names(got), without_names(kvfit::load_model(local.path.string(), warn)));
    const auto log = h.hub.requests();
    EXPECT_EQ(per_file(log).at("model.safetensors"), 2);
    EXPECT_EQ(log.back().headers.at("range"), fmt::format("bytes=65536-{}", w.header().size() - 1));
    EXPECT_EQ(st.bytes, sent_bytes(log));
}

TEST(remote, gguf_by_quantization_by_file_and_split) {
    fake_hub h;
    scratch_dir local("rm_gguf_local"), cache("rm_gguf_cache");
    put_gguf_repo(h, "org/gguf", local.path.string());
    h.repos["org/gguf"].cdn = true;
    struct row {
        const char * spec;
        const char * local_file;
        int requests_per_file; // on the CDN
    };
    const row rows[] = {
        {"hf:org/gguf:Q4_K_M", "model-Q4_K_M.gguf", 1},
        {"hf:org/gguf", "model-Q4_K_M.gguf", 1},                // several models: Q4_K_M, as llama.cpp -hf
        {"hf:org/gguf:model-Q8_0.gguf", "model-Q8_0.gguf", 2},  // 2.7 MB header: 2 MiB, then the estimated rest
        {"hf:org/gguf:q2_k", "Q2_K/model-Q2_K-00001-of-00002.gguf", 1},
        {"hf:org/gguf:Q2_K/model-Q2_K-00002-of-00002.gguf", "Q2_K/model-Q2_K-00001-of-00002.gguf", 1},
    };
    for (const auto & r : rows) {
        h.hub.clear(), h.cdn.clear();
        kvfit::warnings warn;
        kvfit::remote_stats st;
        const auto got = kvfit::model_from_hf(r.spec, options(h, cache), warn, &st);
        const auto want = kvfit::model_from_gguf(local.file(r.local_file), warn);
        EXPECT_EQ(without_names(got), without_names(want)) << r.spec;
        const auto cdn = h.cdn.requests();
        std::map<std::string, int> per_blob;
        for (const auto & q : cdn) ++per_blob[q.path];
        for (const auto & [blob, count] : per_blob) EXPECT_EQ(count, r.requests_per_file) << r.spec << " " << blob;
        // each hop counts: the listing, then per request a 302 from the Hub and a 206 from the CDN
        EXPECT_EQ(st.requests, 1 + 2 * cdn.size()) << r.spec;
        EXPECT_EQ(st.bytes, sent_bytes(h.hub.requests()) + sent_bytes(cdn)) << r.spec;
        // Per file: the first 2 MiB (the whole of these small files), or the header and at most a quarter more.
        std::map<std::string, uint64_t> fetched;
        for (const auto & q : cdn) fetched[q.path] += q.body_bytes_sent;
        for (const auto & [path, b] : h.repos["org/gguf"].files) {
            if (!fetched.count("/blobs/" + b.sha256)) continue;
            EXPECT_LE(fetched["/blobs/" + b.sha256], std::max<uint64_t>(std::min<uint64_t>(b.size, 2 << 20), b.head.size() * 5 / 4))
                << r.spec << " " << path;
        }
        EXPECT_TRUE(std::all_of(cdn.begin(), cdn.end(), [](const http_request & q) { return q.headers.count("range") == 1; }));
    }
    kvfit::warnings warn;
    EXPECT_NE(error_of([&] { kvfit::model_from_hf("hf:org/gguf:IQ4_XS", options(h, cache), warn); })
                  .find("hf:org/gguf: no GGUF file named with IQ4_XS (GGUF files: Q2_K/model-Q2_K-00001-of-00002.gguf, "
                        "model-Q4_K_M.gguf, model-Q8_0.gguf)"), std::string::npos);
    EXPECT_NE(error_of([&] { kvfit::model_from_hf("hf:org/gguf:F16", options(h, cache), warn); }).find("no GGUF file named with F16"),
              std::string::npos); // the vision projector is not a model
    EXPECT_NE(error_of([&] { kvfit::model_from_hf("hf:org/gguf:Q4_K", options(h, cache), warn); }).find("no GGUF file named with Q4_K "),
              std::string::npos); // Q4_K is not Q4_K_M
}

TEST(remote, gated_repo_needs_the_token_and_the_cdn_never_sees_it) {
    fake_hub h;
    scratch_dir local("rm_gated_local"), cache("rm_gated_cache");
    put_llama(h, "org/gated", local.path.string());
    h.repos["org/gated"].gated = true;
    h.repos["org/gated"].cdn = true;
    kvfit::warnings warn;
    EXPECT_EQ(error_of([&] { kvfit::model_from_hf("hf:org/gated", options(h, cache), warn); }),
              "hf:org/gated: file listing: HTTP 401 unauthorized: the repository is gated or private; set HF_TOKEN to a "
              "token with access");
    const std::string wrong = error_of([&] { kvfit::model_from_hf("hf:org/gated", options(h, cache, "wrong-token"), warn); });
    EXPECT_NE(wrong.find("HTTP 401 unauthorized: HF_TOKEN was sent but was refused"), std::string::npos) << wrong;
    EXPECT_EQ(wrong.find("wrong-token"), std::string::npos);
    h.hub.clear();
    const auto got = kvfit::model_from_hf("hf:org/gated", options(h, cache, "secret"), warn);
    EXPECT_EQ(without_names(got), without_names(kvfit::load_model(local.path.string(), warn)));
    for (const auto & r : h.hub.requests()) EXPECT_EQ(r.headers.at("authorization"), "Bearer secret") << r.path;
    const auto cdn = h.cdn.requests();
    ASSERT_EQ(cdn.size(), 2u); // the two shards' headers
    for (const auto & r : cdn) {
        EXPECT_EQ(r.headers.count("authorization"), 0u) << "token forwarded to " << r.path;
        EXPECT_EQ(r.headers.at("range"), "bytes=0-65535"); // the Range survives the redirect
    }
    // The CLI with HF_TOKEN: it works, and the token appears nowhere in the output, --verbose included.
    ::setenv("HF_ENDPOINT", h.hub.origin().c_str(), 1);
    ::setenv("KVFIT_CACHE", cache.path.string().c_str(), 1);
    ::setenv("HF_TOKEN", "secret", 1);
    const auto r = run_kvfit("hf:org/gated --json --verbose");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.find("secret"), std::string::npos);
    EXPECT_EQ(r.err.find("secret"), std::string::npos) << r.err;
    ::unsetenv("HF_TOKEN");
    const auto refused = run_kvfit("hf:org/gated --json");
    EXPECT_EQ(refused.status, 2);
    EXPECT_NE(refused.err.find("kvfit: hf:org/gated: file listing: HTTP 401 unauthorized"), std::string::npos) << refused.err;
    ::unsetenv("HF_ENDPOINT");
    ::unsetenv("KVFIT_CACHE");
}

TEST(remote, one_line_errors) {
    fake_hub h;
    scratch_dir local("rm_err_local"), cache("rm_err_cache"), empty("rm_err_empty");
    put_llama(h, "org/llama", local.path.string());
    put_llama(h, "org/forbidden", local.path.string());
    h.repos["org/forbidden"].forbidden = true;
    const auto st = st_writer(llama_entries({}, st_linear::bf16));
    h.put("org/norange", local.path.string(), "model.safetensors", st.header(), st.file_bytes());
    h.put_text("org/norange", local.path.string(), "config.json", llama_config({}));
    h.repos["org/norange"].no_range = true;
    auto offline = options(h, empty);
    offline.offline = true;
    auto unreachable = options(h, cache);
    unreachable.endpoint = fmt::format("http://127.0.0.1:{}", closed_port());
    struct row {
        const char * spec;
        kvfit::remote_options o;
        const char * expected;
    };
    const row rows[] = {
        {"hf:org/missing", options(h, cache), "hf:org/missing: file listing: HTTP 404 not found: no such repository, revision or file"},
        {"hf:org/llama@v9", options(h, cache), "hf:org/llama@v9: file listing: HTTP 404 not found"},
        {"hf:org/forbidden", options(h, cache, "secret"), "hf:org/forbidden: file listing: HTTP 403 forbidden: the token has no access"},
        {"hf:org/norange", options(h, cache), "hf:org/norange/model.safetensors: the server ignored the Range request (HTTP 200 "
                                              "with the whole file); stopped after "},
        {"hf:org/llama", unreachable, "hf:org/llama: file listing: cannot reach 127.0.0.1:"},
        {"hf:org/llama", offline, "hf:org/llama: not in the cache ("},
        {"hf:org/llama:Q4_K_M", options(h, cache), "hf:org/llama: no .gguf file in the repository"},
    };
    for (const auto & r : rows) {
        kvfit::warnings warn;
        const std::string got = error_of([&] { kvfit::model_from_hf(r.spec, r.o, warn); });
        EXPECT_NE(got.find(r.expected), std::string::npos) << r.spec << ": got '" << got << "'";
        EXPECT_EQ(got.find('\n'), std::string::npos);
        EXPECT_EQ(got.find("secret"), std::string::npos);
    }
    // The server that ignored Range sent its whole file, but kvfit stopped reading after the 64 KiB it asked for.
    kvfit::warnings warn;
    kvfit::remote_stats stats;
    error_of([&] { kvfit::model_from_hf("hf:org/norange", options(h, cache), warn, &stats); });
    EXPECT_LE(stats.bytes - h.repos["org/norange"].files.at("config.json").size, 65536u + 4096u);
}

TEST(remote, listing_pages_and_revisions) {
    fake_hub h;
    scratch_dir local("rm_page_local"), cache("rm_page_cache");
    put_llama(h, "org/paged", local.path.string());
    h.repos["org/paged"].page = 2; // 6 entries (a directory and 5 files): 3 pages
    kvfit::warnings warn;
    const auto got = kvfit::model_from_hf("hf:org/paged@v1", options(h, cache), warn);
    EXPECT_EQ(without_names(got), without_names(kvfit::load_model(local.path.string(), warn)));
    int pages = 0;
    for (const auto & r : h.hub.requests()) {
        if (r.path.find("/tree/") != std::string::npos) {
            ++pages;
            EXPECT_TRUE(r.path.ends_with("/tree/v1")) << r.path;
        } else {
            EXPECT_NE(r.path.find("/resolve/v1/"), std::string::npos) << r.path;
        }
    }
    EXPECT_EQ(pages, 3);
}

// gguf_file::parse_prefix: every prefix of a header either parses to the same file or asks for more bytes.
TEST(remote, gguf_prefix_parse_asks_for_more_until_the_tensor_infos_end) {
    const kvfit::gguf_writer w = gguf_llama(3000, kvfit::ggml_type::q8_0);
    const std::string head = w.header();
    const uint64_t size = w.data_offset() + w.data_bytes();
    uint64_t unused = 0;
    const auto full = kvfit::gguf_file::parse_prefix(head, size, "m.gguf", unused);
    ASSERT_TRUE(full);
    for (size_t n = 0; n <= head.size(); n += 13) {
        uint64_t need = 0;
        const auto f = kvfit::gguf_file::parse_prefix(head.substr(0, n), size, "m.gguf", need);
        if (n < head.size()) {
            ASSERT_FALSE(f) << n;
            EXPECT_GT(need, n);
            EXPECT_LE(need, size);
        }
    }
    uint64_t need = 0;
    const auto f = kvfit::gguf_file::parse_prefix(head, size, "m.gguf", need);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->tensors().size(), full->tensors().size());
    EXPECT_EQ(f->header_bytes(), head.size());
    // Half the vocabulary read: the estimate of the rest lands within a few percent past the end of the infos.
    kvfit::gguf_file::parse_prefix(head.substr(0, head.size() / 2), size, "m.gguf", need);
    EXPECT_GE(need, head.size());
    EXPECT_LT(need, head.size() * 6 / 5);
}

// The CLI: `kvfit hf:org/name --json` prints the local directory's plan; --verbose reports the requests and bytes.
TEST(remote, cli_plan_equals_the_local_plan) {
    fake_hub h;
    scratch_dir local("rm_cli_local"), cache("rm_cli_cache");
    put_llama(h, "org/llama", local.path.string());
    ::setenv("HF_ENDPOINT", h.hub.origin().c_str(), 1);
    ::setenv("KVFIT_CACHE", cache.path.string().c_str(), 1);
    ::unsetenv("HF_TOKEN");
    auto plan = [](const std::string & out) {
        auto j = nlohmann::json::parse(out);
        j["model"].erase("name");
        j["model"].erase("source");
        j.erase("warnings");
        j.erase("launch"); // "llama-server -m <the model's path>"
        return j;
    };
    const auto want = run_kvfit(local.path.string() + " --json -c 4096,8192 --gpu 8GiB");
    const auto got = run_kvfit("hf:org/llama --json -c 4096,8192 --gpu 8GiB --verbose");
    ASSERT_EQ(got.status, want.status) << got.err;
    EXPECT_EQ(plan(got.out), plan(want.out));
    EXPECT_EQ(plan(got.out)["model"]["weights_exact"], true);
    EXPECT_NE(got.err.find("kvfit: hf:org/llama: 5 requests, "), std::string::npos) << got.err;
    EXPECT_NE(got.err.find("range 0-65535 -> 206, 65536 B"), std::string::npos) << got.err;
    const auto offline = run_kvfit("hf:org/llama --json -c 4096,8192 --gpu 8GiB --offline");
    ASSERT_EQ(offline.status, want.status) << offline.err;
    EXPECT_EQ(plan(offline.out), plan(want.out));
    const auto missing = run_kvfit("hf:org/none --json");
    EXPECT_EQ(missing.status, 2);
    EXPECT_NE(missing.err.find("kvfit: hf:org/none: file listing: HTTP 404 not found"), std::string::npos) << missing.err;
    ::unsetenv("HF_ENDPOINT");
    ::unsetenv("KVFIT_CACHE");
}

TEST(remote, cache_location_from_the_environment) {
    ::setenv("KVFIT_CACHE", "/x/kv", 1);
    EXPECT_EQ(kvfit::default_cache_dir(), "/x/kv");
    ::unsetenv("KVFIT_CACHE");
    const char * xdg = std::getenv("XDG_CACHE_HOME");
    const std::string saved = xdg ? xdg : "";
    ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
    EXPECT_EQ(kvfit::default_cache_dir(), "/x/cache/kvfit");
    ::unsetenv("XDG_CACHE_HOME");
    ::setenv("HF_ENDPOINT", "http://mirror.example/", 1);
    EXPECT_EQ(kvfit::remote_options_from_env().endpoint, "http://mirror.example");
    ::unsetenv("HF_ENDPOINT");
    EXPECT_EQ(kvfit::remote_options_from_env().endpoint, "https://huggingface.co");
    if (!saved.empty()) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

} // namespace
