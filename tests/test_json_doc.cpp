// docs/json.md against the documents kvfit writes (issue 26: the doc and the output must not drift).
//
// The doc is read, not copied: its "Common fields" table, the paragraphs that describe `model`, `devices[]`,
// `buffers[]`, `caches[]`, `max_context[]` and `alternatives[]`, and the per-runtime sections under "detail, per
// runtime" ("### llama.cpp", "### vLLM", ...). Every key of every document below, at every depth, must be named in
// backticks in the part of the doc that describes it (a detail key in its runtime's section); every field of the
// "Common fields" table must be in every plan, and every row of llama.cpp's detail table that is not marked optional
// ("only when", "only with", "present only") must be in every llama.cpp plan. The documents are the golden plans of
// tests/data/golden (every runtime) and plans made here for what the goldens do not reach (MLX, llama.cpp's host
// RAM, speculative decoding, a CPU-only plan, vLLM's speculative decoding and placements).
#include "support/files.h"
#include "support/run_cli.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <gtest/gtest.h>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

/// Identifiers written in backticks in `text`: `a.b[]` gives a and b, `"vllm"` gives vllm.
std::set<std::string> backticked(const std::string & text) {
    std::set<std::string> out;
    static const std::regex tick("`([^`]*)`");
    static const std::regex ident("[A-Za-z_][A-Za-z0-9_]*");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), tick); it != std::sregex_iterator(); ++it) {
        const std::string inner = (*it)[1];
        for (auto jt = std::sregex_iterator(inner.begin(), inner.end(), ident); jt != std::sregex_iterator(); ++jt)
            out.insert((*jt)[0]);
    }
    return out;
}

/// docs/json.md cut into the parts this test reads.
struct json_doc {
    std::set<std::string> common;                    ///< first column of "Common fields"
    std::set<std::string> common_optional;           ///< of those, the rows marked "present only when"
    std::map<std::string, std::set<std::string>> of; ///< `model`, `devices`, `buffers`, ... -> names in its paragraph
    std::map<std::string, std::set<std::string>> detail; ///< lower-cased runtime heading -> names in its section
    std::vector<std::string> llamacpp_required;      ///< llama.cpp detail rows not marked optional
};

json_doc read_doc() {
    json_doc d;
    const std::string text = kvfit::test::read_text(std::string(KVFIT_SOURCE_DIR) + "/docs/json.md");
    std::istringstream in(text);
    std::string line, h2, h3, para_key;
    std::string para;
    auto end_para = [&] {
        if (!para_key.empty()) d.of[para_key] = backticked(para);
        para_key.clear();
        para.clear();
    };
    static const std::regex para_start("^`([a-z_]+)(\\[\\])?`( \\([^)]*\\))?:");
    while (std::getline(in, line)) {
        if (line.rfind("## ", 0) == 0) { end_para(); h2 = line.substr(3); h3.clear(); continue; }
        if (line.rfind("### ", 0) == 0) { end_para(); h3 = line.substr(4); continue; }
        if (h2 == "Common fields" && line.rfind("| `", 0) == 0) {
            const auto cell = line.substr(1, line.find('|', 1) - 1);
            const bool optional = line.find("present only") != std::string::npos;
            for (const auto & n : backticked(cell)) (optional ? d.common_optional : d.common).insert(n);
            continue;
        }
        if (h2 == "Common fields") {
            std::smatch m;
            if (std::regex_search(line, m, para_start)) { end_para(); para_key = m[1]; }
            if (line.empty()) end_para();
            else if (!para_key.empty()) para += line + "\n";
            continue;
        }
        if (h2 == "detail, per runtime" && !h3.empty()) {
            std::string rt;
            for (char c : h3) rt += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            for (const auto & n : backticked(line)) d.detail[rt].insert(n);
            if (rt == "llama.cpp" && line.rfind("| `", 0) == 0) {
                const auto second = line.find('|', 1);
                const auto cell = line.substr(1, second - 1);
                const auto meaning = line.substr(second + 1);
                const bool optional = meaning.find("only when") != std::string::npos ||
                                      meaning.find("only with") != std::string::npos ||
                                      meaning.find("present only") != std::string::npos;
                if (!optional)
                    for (const auto & n : backticked(cell)) d.llamacpp_required.push_back(n);
            }
        }
    }
    end_para();
    return d;
}

/// Every key of `j` at every depth (arrays looked into), each with the path it was found at.
void keys_of(const json & j, const std::string & path, std::vector<std::pair<std::string, std::string>> & out) {
    if (j.is_object()) {
        for (const auto & [k, v] : j.items()) {
            out.emplace_back(k, path + "." + k);
            keys_of(v, path + "." + k, out);
        }
    } else if (j.is_array()) {
        for (const auto & v : j) keys_of(v, path + "[]", out);
    }
}

/// The documents checked: every golden plan, and plans the goldens do not reach.
std::vector<std::pair<std::string, json>> documents() {
    std::vector<std::pair<std::string, json>> docs;
    for (const auto & e : fs::directory_iterator(std::string(KVFIT_TEST_DATA) + "/golden")) {
        if (e.path().extension() != ".json") continue;
        docs.emplace_back(e.path().filename().string(), json::parse(kvfit::test::read_text(e.path().string())));
    }
    const char * more[] = {
        "Qwen3.5-9B --runtime mlx --gpu 'M4 Pro 48GB' --context-tokens 32768",
        "Qwen3.5-9B --runtime mlx --gpu 'M4 Pro 48GB' --mlx-command server --num-sequences 4 --context-tokens 32768",
        "Qwen3.5-9B --gpu 'RTX 4090' -c 32768 --ram 32GiB --cache-ram 8192 --ctx-checkpoints 4",
        "Qwen3.5-9B -c 32768",
        "gpt-oss-20b --gpu 'RTX 4090' -c 65536 -np 4 -ctk q8_0 -ctv q8_0",
        "Meta-Llama-3.1-8B --runtime vllm --gpu 2xH100 --max-model-len 131072",
        "Qwen3.5-27B --runtime vllm --gpu H200 --max-model-len 65536 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
        "Meta-Llama-3.1-8B --runtime sglang --gpu 'RTX 4090' --context-length 131072",
        "Qwen3.5-9B --runtime ollama --gpu 8GiB",
    };
    for (const char * args : more) {
        const auto r = kvfit::test::run_kvfit(std::string(args) + " --json");
        EXPECT_TRUE(r.status == 0 || r.status == 3) << args << ": " << r.err;
        if (r.status != 0 && r.status != 3) continue;
        docs.emplace_back(args, json::parse(r.out));
    }
    return docs;
}

TEST(json_doc, every_key_written_is_documented_and_every_documented_field_is_written) {
    const json_doc d = read_doc();
    ASSERT_GE(d.common.size(), 20u) << "docs/json.md: the Common fields table was not found";
    for (const char * part : {"model", "devices", "buffers", "caches", "max_context", "alternatives"})
        ASSERT_TRUE(d.of.count(part)) << "docs/json.md: no paragraph `" << part << "`:";
    for (const char * rt : {"llama.cpp", "vllm", "sglang", "ollama", "mlx"})
        ASSERT_TRUE(d.detail.count(rt)) << "docs/json.md: no section ### for " << rt;
    ASSERT_GE(d.llamacpp_required.size(), 10u);

    std::set<std::string> runtimes_seen;
    std::set<std::string> undocumented;
    for (const auto & [name, doc] : documents()) {
        ASSERT_TRUE(doc.is_object()) << name;
        const std::string rt = doc.value("runtime", "");
        runtimes_seen.insert(rt);
        for (const auto & f : d.common)
            EXPECT_TRUE(doc.contains(f)) << name << ": the documented field `" << f << "` is not written";
        for (const auto & [k, v] : doc.items()) {
            if (!d.common.count(k) && !d.common_optional.count(k)) undocumented.insert(rt + ": ." + k);
            std::vector<std::pair<std::string, std::string>> sub;
            if (k == "detail") {
                keys_of(v, ".detail", sub);
                for (const auto & [key, path] : sub) {
                    // Ollama's llama_server is llama.cpp's detail of the context Ollama starts
                    const bool llama_server = path.rfind(".detail.llama_server.", 0) == 0;
                    const auto & allowed = d.detail.at(llama_server ? "llama.cpp" : rt);
                    if (!allowed.count(key) && !d.detail.at(rt).count(key))
                        undocumented.insert(rt + ": " + path);
                }
                if (rt == "llama.cpp") {
                    for (const auto & f : d.llamacpp_required)
                        EXPECT_TRUE(v.contains(f)) << name << ": llama.cpp's documented detail field `" << f
                                                   << "` is not written";
                }
                continue;
            }
            const std::string part = k == "gpus" ? "" : k;
            if (!d.of.count(part)) continue;
            keys_of(v, "." + k, sub);
            for (const auto & [key, path] : sub) {
                // a buffer's fields are documented in their own paragraph (`buffers[]`)
                const bool in_buffers = path.find(".buffers[]") != std::string::npos;
                const auto & allowed = d.of.at(in_buffers ? "buffers" : part);
                if (!allowed.count(key)) undocumented.insert(rt + ": " + path);
            }
        }
    }
    EXPECT_EQ(runtimes_seen, (std::set<std::string>{"llama.cpp", "vllm", "sglang", "ollama", "mlx"}));
    std::string list;
    for (const auto & u : undocumented) list += "\n  " + u;
    EXPECT_TRUE(undocumented.empty()) << "keys written but not named in docs/json.md:" << list;
}

} // namespace
