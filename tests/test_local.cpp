// Models on disk (include/kvfit/local.h): fake stores built in temp directories, laid out as the tools lay them out,
// with real GGUF headers from kvfit's writer and Ollama manifests in Ollama's JSON shape
// (server/internal/manifest/manifest.go; names as types/model/name.go parses them). Done-when (issue 16): a model
// read through a store plans exactly as its file does, and `--list --local` lists and plans the stores.
#include "kvfit/error.h"
#include "kvfit/local.h"
#include "kvfit/sources.h"

#include "support/fake_hub.h"
#include "support/run_cli.h"
#include "support/st_fixture.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using kvfit::test::run_kvfit_env;
using kvfit::test::scratch_dir;

std::string sha256_of(const std::string & path) {
    std::string out;
    FILE * p = ::popen(("sha256sum '" + path + "'").c_str(), "r");
    char buf[128] = {};
    if (p && std::fgets(buf, sizeof buf, p)) out.assign(buf, 64);
    if (p) ::pclose(p);
    return out;
}

void write_text(const fs::path & p, const std::string & text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
}

// A sparse file: `head`, then zeros up to `size`.
void write_sparse(const fs::path & p, const std::string & head, uint64_t size) {
    fs::create_directories(p.parent_path());
    { std::ofstream(p, std::ios::binary) << head; }
    fs::resize_file(p, size);
}

struct layer {
    std::string media_type, digest;
    uint64_t size;
};

// Write `file` into the store's blobs/ under its sha256 and return its layer.
layer add_blob(const fs::path & root, const std::string & media_type, const std::string & file) {
    const std::string hex = sha256_of(file);
    EXPECT_EQ(hex.size(), 64u);
    fs::create_directories(root / "blobs");
    const fs::path blob = root / "blobs" / ("sha256-" + hex);
    fs::rename(file, blob);
    return {media_type, "sha256:" + hex, fs::file_size(blob)};
}

// The manifest as Ollama writes it: schemaVersion 2, the docker media type, a config blob, the layers.
std::string manifest_json(const layer & config, const std::vector<layer> & layers) {
    nlohmann::ordered_json j;
    j["schemaVersion"] = 2;
    j["mediaType"] = "application/vnd.docker.distribution.manifest.v2+json";
    j["config"] = {{"mediaType", config.media_type}, {"digest", config.digest}, {"size", config.size}};
    j["layers"] = nlohmann::ordered_json::array();
    for (const auto & l : layers) j["layers"].push_back({{"mediaType", l.media_type}, {"digest", l.digest}, {"size", l.size}});
    return j.dump();
}

// An Ollama store holding tiny:q8 (a model, a projector, a template) and someone/tiny (model only).
struct ollama_store {
    scratch_dir dir{"ollama_store"};
    fs::path root = dir.path / "models";
    std::string model_blob;
    ollama_store() {
        const auto gguf = kvfit::test::gguf_llama(512, kvfit::ggml_type::q8_0);
        gguf.write(dir.file("model.gguf"));
        const auto proj = kvfit::test::gguf_llama(512, kvfit::ggml_type::f16);
        proj.write(dir.file("proj.gguf"));
        write_text(dir.file("config.json"), R"({"model_format":"gguf","model_family":"llama","model_type":"1M","file_type":"Q8_0","architecture":"amd64","os":"linux"})");
        write_text(dir.file("template"), "{{ .Prompt }}");
        const layer model = add_blob(root, "application/vnd.ollama.image.model", dir.file("model.gguf"));
        const layer projector = add_blob(root, "application/vnd.ollama.image.projector", dir.file("proj.gguf"));
        const layer tmpl = add_blob(root, "application/vnd.ollama.image.template", dir.file("template"));
        const layer config = add_blob(root, "application/vnd.docker.container.image.v1+json", dir.file("config.json"));
        model_blob = (root / "blobs" / ("sha256-" + model.digest.substr(7))).string();
        write_text(root / "manifests/registry.ollama.ai/library/tiny/q8", manifest_json(config, {model, projector, tmpl}));
        write_text(root / "manifests/registry.ollama.ai/someone/tiny/latest", manifest_json(config, {model, tmpl}));
    }
    std::string env() const {
        return fmt::format("env -u HF_HOME -u LLAMA_CACHE OLLAMA_MODELS={} HOME={} XDG_CACHE_HOME={} HF_HUB_CACHE={}",
                           root.string(), dir.file("home"), dir.file("xdg"), dir.file("hub"));
    }
};

// The plan without what names the file: the model's name and source, the launch line, the warnings.
nlohmann::json plan_of(const std::string & out) {
    auto j = nlohmann::json::parse(out);
    j["model"].erase("name");
    j["model"].erase("source");
    j.erase("warnings");
    j.erase("launch");
    return j;
}

TEST(local, ollama_names_parse_as_ollama_parses_them) {
    const auto a = kvfit::parse_ollama_name("ollama:qwen3:8b");
    EXPECT_EQ(a.host, "registry.ollama.ai");
    EXPECT_EQ(a.ns, "library");
    EXPECT_EQ(a.model, "qwen3");
    EXPECT_EQ(a.tag, "8b");
    EXPECT_EQ(a.display(), "qwen3:8b");
    const auto b = kvfit::parse_ollama_name("ollama:someone/tiny");
    EXPECT_EQ(b.ns, "someone");
    EXPECT_EQ(b.tag, "latest");
    EXPECT_EQ(b.display(), "someone/tiny:latest");
    const auto c = kvfit::parse_ollama_name("ollama:localhost:5000/team/m:v1");
    EXPECT_EQ(c.host, "localhost:5000");
    EXPECT_EQ(c.display(), "localhost:5000/team/m:v1");
    for (const char * bad : {"ollama:", "ollama:../x", "ollama:a/b/c/d", "ollama:x:", "ollama:.hidden", "ollama:a b"}) {
        EXPECT_THROW(kvfit::parse_ollama_name(bad), kvfit::error) << bad;
    }
}

// Done-when: an Ollama manifest and blob give the plan of the blob itself.
TEST(local, ollama_model_plans_as_its_blob) {
    ollama_store s;
    const auto want = run_kvfit_env(s.env(), s.model_blob + " --json -c 4096 --gpu 8GiB");
    const auto got = run_kvfit_env(s.env(), "ollama:tiny:q8 --json -c 4096 --gpu 8GiB");
    ASSERT_EQ(want.status, 0) << want.err;
    ASSERT_EQ(got.status, want.status) << got.err;
    EXPECT_EQ(plan_of(got.out), plan_of(want.out));
    const auto j = nlohmann::json::parse(got.out);
    EXPECT_EQ(j["model"]["name"], "tiny:q8");
    EXPECT_EQ(j["model"]["weights_exact"], true);
    bool projector_said = false;
    for (const auto & w : j["warnings"]) projector_said |= w.get<std::string>().find("projector sha256-") != std::string::npos;
    EXPECT_TRUE(projector_said) << j["warnings"].dump();
    const auto user = run_kvfit_env(s.env(), "ollama:someone/tiny --json -c 4096 --gpu 8GiB");
    ASSERT_EQ(user.status, 0) << user.err;
    EXPECT_EQ(plan_of(user.out), plan_of(want.out));
}

// Hostile manifests: one line each, exit 2.
TEST(local, hostile_manifests_give_one_line_errors) {
    ollama_store s;
    const fs::path man = s.root / "manifests/registry.ollama.ai/library";
    const std::string blob_digest = fs::path(s.model_blob).filename().string().substr(7);
    auto expect_error = [&](const std::string & name, const std::string & text, const std::string & want) {
        if (!text.empty()) write_text(man / name / "latest", text);
        const auto r = run_kvfit_env(s.env(), "ollama:" + name + " --json");
        EXPECT_EQ(r.status, 2) << name;
        EXPECT_NE(r.err.find(want), std::string::npos) << name << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    };
    const std::string model_layer = R"({"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)";
    expect_error("missing", fmt::format(R"({{"schemaVersion":2,"layers":[{}{}","size":1}}]}})", model_layer, std::string(64, 'a')),
                 "blob sha256-" + std::string(64, 'a') + " is missing (an interrupted pull? run: ollama pull missing:latest)");
    expect_error("baddigest", R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:../../etc/passwd","size":1}]})",
                 "layers[0]: digest 'sha256:../../etc/passwd' is not sha256:<64 hex digits>");
    expect_error("shortblob", fmt::format(R"({{"schemaVersion":2,"layers":[{}{}","size":99}}]}})", model_layer, blob_digest),
                 "the manifest says 99 (an interrupted pull?");
    expect_error("notjson", "{\"layers\": [", "is not valid JSON");
    expect_error("noshape", R"({"layers": {"a": 1}})", "expected an object with a \"layers\" array");
    expect_error("nomodel", R"({"schemaVersion":2,"layers":[]})", "no layer of mediaType application/vnd.ollama.image.model");
    expect_error("tensors", fmt::format(R"({{"layers":[{{"mediaType":"application/vnd.ollama.image.tensor; name=x; dtype=BF16","digest":"sha256:{}","size":1}}]}})", blob_digest),
                 "stored as tensor layers");
    write_sparse(man / "huge" / "latest", "{", 5ull << 20); // 5 MiB of a "manifest"
    expect_error("huge", "", "5242880 bytes exceeds the limit of 4194304 bytes");
    expect_error("absent", "", "no manifest ");
    const auto bad_name = run_kvfit_env(s.env(), "'ollama:../../x'");
    EXPECT_EQ(bad_name.status, 2);
    EXPECT_NE(bad_name.err.find("expected [A-Za-z0-9._-]"), std::string::npos) << bad_name.err;
}

// A hub cache snapshot as huggingface_hub writes it: refs/main -> snapshots/<commit>/ with links into blobs/.
struct hub_store {
    scratch_dir dir{"hub_store"};
    fs::path hub = dir.path / "hub";
    std::string commit = std::string(40, 'c');
    fs::path snap_llama = hub / "models--org--llama" / "snapshots" / commit;
    fs::path snap_gguf = hub / "models--org--tiny-GGUF" / "snapshots" / commit;
    hub_store() {
        // org/llama: config.json + two safetensors shards + the index, as blobs linked from the snapshot
        const kvfit::test::llama_shape sh;
        const auto entries = kvfit::test::llama_entries(sh, kvfit::test::st_linear::bf16);
        const size_t half = entries.size() / 2;
        const std::vector<kvfit::test::st_entry> a(entries.begin(), entries.begin() + long(half)), b(entries.begin() + long(half), entries.end());
        const auto wa = kvfit::test::st_writer(a), wb = kvfit::test::st_writer(b);
        const fs::path blobs = hub / "models--org--llama" / "blobs";
        auto put = [&](const std::string & name, const std::string & head, uint64_t size) {
            const fs::path blob = blobs / fmt::format("{:064x}", std::hash<std::string>{}(name));
            write_sparse(blob, head, size);
            fs::create_directories(snap_llama);
            fs::create_symlink(fs::relative(blob, snap_llama), snap_llama / name);
        };
        put("config.json", kvfit::test::llama_config(sh), kvfit::test::llama_config(sh).size());
        put("model-00001-of-00002.safetensors", wa.header(), wa.file_bytes());
        put("model-00002-of-00002.safetensors", wb.header(), wb.file_bytes());
        const std::string index = kvfit::test::st_index({{"model-00001-of-00002.safetensors", a}, {"model-00002-of-00002.safetensors", b}});
        put("model.safetensors.index.json", index, index.size());
        write_text(hub / "models--org--llama" / "refs" / "main", commit);
        // org/tiny-GGUF: two quantizations and a projector, plain files in the snapshot
        const auto q4 = kvfit::test::gguf_llama(512, kvfit::ggml_type::q4_k), q8 = kvfit::test::gguf_llama(512, kvfit::ggml_type::q8_0);
        fs::create_directories(snap_gguf);
        q4.write((snap_gguf / "tiny-Q4_K_M.gguf").string());
        q8.write((snap_gguf / "tiny-Q8_0.gguf").string());
        kvfit::test::gguf_llama(512, kvfit::ggml_type::f16).write((snap_gguf / "mmproj-tiny-F16.gguf").string());
        write_text(hub / "models--org--tiny-GGUF" / "refs" / "main", commit + "\n");
    }
    // HF_ENDPOINT points nowhere: a request would fail, so a plan proves the cache answered
    std::string env() const {
        return fmt::format("env -u HF_HOME -u LLAMA_CACHE HF_HUB_CACHE={} HF_ENDPOINT=http://127.0.0.1:9 KVFIT_CACHE={} "
                           "HOME={} XDG_CACHE_HOME={} OLLAMA_MODELS={}", hub.string(), dir.file("kvfit"), dir.file("home"),
                           dir.file("xdg"), dir.file("none"));
    }
};

// Done-when: a hub cache snapshot gives the plan of the same files on disk, with no request.
TEST(local, hub_cache_snapshot_plans_as_its_files_without_the_network) {
    hub_store s;
    const auto want = run_kvfit_env(s.env(), s.snap_llama.string() + " --json -c 4096 --gpu 8GiB");
    ASSERT_EQ(want.status, 0) << want.err;
    const auto got = run_kvfit_env(s.env(), "hf:org/llama --json -c 4096 --gpu 8GiB --verbose");
    ASSERT_EQ(got.status, 0) << got.err;
    EXPECT_EQ(plan_of(got.out), plan_of(want.out));
    EXPECT_EQ(nlohmann::json::parse(got.out)["model"]["weights_exact"], true);
    EXPECT_NE(got.err.find("hub cache " + s.snap_llama.string() + ": config.json and safetensors"), std::string::npos) << got.err;
    EXPECT_NE(got.err.find("0 requests"), std::string::npos) << got.err;

    const auto want_q8 = run_kvfit_env(s.env(), (s.snap_gguf / "tiny-Q8_0.gguf").string() + " --json -c 4096 --gpu 8GiB");
    const auto got_q8 = run_kvfit_env(s.env(), "hf:org/tiny-GGUF:Q8_0 --json -c 4096 --gpu 8GiB");
    ASSERT_EQ(got_q8.status, 0) << got_q8.err;
    EXPECT_EQ(plan_of(got_q8.out), plan_of(want_q8.out));
    // no selector and several GGUF files: Q4_K_M, as llama.cpp's -hf picks
    const auto want_q4 = run_kvfit_env(s.env(), (s.snap_gguf / "tiny-Q4_K_M.gguf").string() + " --json -c 4096 --gpu 8GiB");
    const auto got_q4 = run_kvfit_env(s.env(), "hf:org/tiny-GGUF --json -c 4096 --gpu 8GiB");
    ASSERT_EQ(got_q4.status, 0) << got_q4.err;
    EXPECT_EQ(plan_of(got_q4.out), plan_of(want_q4.out));
    // what the snapshot does not hold goes to the Hub (here: nowhere)
    const auto miss = run_kvfit_env(s.env(), "hf:org/tiny-GGUF:Q2_K --json");
    EXPECT_EQ(miss.status, 2);
    EXPECT_NE(miss.err.find("cannot reach"), std::string::npos) << miss.err;
    EXPECT_EQ(kvfit::hf_cache_snapshot({s.hub.string()}, "org/llama", "main"), s.snap_llama.string());
    EXPECT_EQ(kvfit::hf_cache_snapshot({s.hub.string()}, "org/llama", s.commit), s.snap_llama.string());
    EXPECT_EQ(kvfit::hf_cache_snapshot({s.hub.string()}, "org/llama", "dev"), "");
}

// Done-when: --list --local on the fake stores: every store listed, each planned as its file.
TEST(local, list_local_lists_and_plans_every_store) {
    ollama_store o;
    hub_store h;
    scratch_dir other("local_other");
    const fs::path home = other.path / "home", llama = other.path / "llama-cache";
    // LM Studio's <publisher>/<repo>/*.gguf and llama.cpp's flat cache (<org>_<repo>_<tag>.gguf, common/download.cpp)
    fs::create_directories(home / ".lmstudio/models/pub/tiny-GGUF");
    kvfit::test::gguf_llama(512, kvfit::ggml_type::q6_k).write((home / ".lmstudio/models/pub/tiny-GGUF/tiny-Q6_K.gguf").string());
    fs::create_directories(llama);
    kvfit::test::gguf_llama(512, kvfit::ggml_type::q4_0).write((llama / "org_tiny_Q4_0.gguf").string());
    const std::string env = fmt::format("env -u HF_HOME OLLAMA_MODELS={} HF_HUB_CACHE={} LLAMA_CACHE={} HOME={} XDG_CACHE_HOME={} "
                                        "HF_ENDPOINT=http://127.0.0.1:9", o.root.string(), h.hub.string(), llama.string(),
                                        home.string(), other.file("xdg"));
    const auto listed = run_kvfit_env(env, "--list --local");
    ASSERT_EQ(listed.status, 0) << listed.err;
    for (const std::string spec : {"ollama:someone/tiny:latest", "ollama:tiny:q8", "hf:org/llama", "hf:org/tiny-GGUF:tiny-Q4_K_M.gguf",
                                   "hf:org/tiny-GGUF:tiny-Q8_0.gguf", "org_tiny_Q4_0.gguf", "tiny-Q6_K.gguf"}) {
        EXPECT_NE(listed.out.find(spec), std::string::npos) << spec << "\n" << listed.out;
    }
    EXPECT_EQ(listed.out.find("mmproj"), std::string::npos) << listed.out;

    const auto ranked = run_kvfit_env(env, "--list --local --gpu 8GiB --json");
    ASSERT_EQ(ranked.status, 0) << ranked.err;
    const auto j = nlohmann::json::parse(ranked.out);
    ASSERT_EQ(j["models"].size(), 7u) << ranked.out;
    for (const auto & row : j["models"]) {
        ASSERT_TRUE(row["error"].get<std::string>().empty()) << row.dump();
        EXPECT_TRUE(row["fits"].get<bool>()) << row.dump();
        EXPECT_TRUE(row["weights_exact"].get<bool>()) << row.dump();
        // the row's largest context is the file's own plan's, for the cache type chosen
        const std::string spec = row["name"];
        const std::string arg = spec.starts_with("ollama:") || spec.starts_with("hf:") ? spec : row["source"].get<std::string>();
        const auto own = run_kvfit_env(env, "'" + arg + "' --json --gpu 8GiB");
        ASSERT_EQ(own.status, 0) << own.err;
        uint64_t own_ctx = 0;
        const auto own_doc = nlohmann::json::parse(own.out);
        for (const auto & mc : own_doc["max_context"]) {
            if (mc["cache_type"] == row["cache_type"] && !mc["all_full_attention"].get<bool>()) own_ctx = mc["context_tokens"];
        }
        EXPECT_EQ(row["context_tokens"].get<uint64_t>(), own_ctx) << spec;
        EXPECT_EQ(row["context_capped"], true) << spec; // a 2-block model fits its whole training context
    }
    const auto text = run_kvfit_env(env, "--list --local --gpu 8GiB");
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("7 models on GPU0 (8.00 GiB) under llama.cpp rules: 7 fit, 0 do not"), std::string::npos) << text.out;
}

} // namespace
