// Data flows one way (STYLE.md, the runtime design): core < sources < runtimes < planner < report < app, server,
// launch. A file includes only headers of its own layer or below, and a runtime's folder includes no other
// runtime's, except Ollama's the llama.cpp one (Ollama runs llama-server). This test reads every #include "..." in
// src/, include/kvfit/ and app/ and fails on an upward or sideways include, naming the file and the header.
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <regex>
#include <string>

namespace {

namespace fs = std::filesystem;

// The layer of each public header. A new header must be placed here, so that the test knows where it belongs.
// gguf_writer.h, safetensors_writer.h and server.h are not installed (src/kvfit/: not the library's API);
// kvfit.h, the umbrella, includes them all.
const std::map<std::string, int> k_public = {
    {"version.h", 0}, {"kvfit.h", 5}, {"error.h", 0}, {"ggml_type.h", 0}, {"model.h", 0}, {"search.h", 0}, {"units.h", 0}, {"printable.h", 0},
    {"sources.h", 1}, {"local.h", 1}, {"gguf.h", 1}, {"gguf_writer.h", 1}, {"safetensors.h", 1}, {"safetensors_writer.h", 1}, {"remote.h", 1},
    {"runtime.h", 2}, {"llamacpp.h", 2}, {"llamacpp_cpu.h", 2}, {"llamacpp_extras.h", 2}, {"vllm.h", 2}, {"sglang.h", 2}, {"ollama.h", 2},
    {"mlx.h", 2}, {"metal.h", 2},
    {"plan.h", 3}, {"model_set.h", 3}, {"ranking.h", 3}, {"gpus.h", 3}, {"detect.h", 3}, {"speed.h", 3},
    {"report.h", 4}, {"chart.h", 4},
    {"launch.h", 5}, {"serving_log.h", 5}, {"server.h", 5},
};

// The runtime a public header belongs to ("" for the interface and non-runtime headers).
std::string runtime_of_header(const std::string & name) {
    if (name == "llamacpp_cpu.h" || name == "llamacpp_extras.h") return "llamacpp";
    for (const char * r : {"llamacpp", "vllm", "sglang", "ollama", "mlx"}) {
        if (name == std::string(r) + ".h") return r;
    }
    return "";
}

const std::map<std::string, int> k_folders = {{"core", 0}, {"sources", 1}, {"runtimes", 2}, {"planner", 3},
                                              {"report", 4}, {"launch", 5}, {"server", 5}};

struct place { int layer = -1; std::string runtime; }; // runtime: src/runtimes/<name>/ ("common" is shared)

// Where a file of the tree sits: src/<folder>/..., include/kvfit/<header>, app/ (the top).
place place_of(const fs::path & rel) {
    const auto first = rel.begin();
    const std::string top = first->string();
    if (top == "app") return {6, ""};
    if (top == "include") return {k_public.count(rel.filename().string()) ? k_public.at(rel.filename().string()) : -1,
                                  runtime_of_header(rel.filename().string())};
    const auto second = std::next(first);
    const std::string folder = second->string();
    if (folder == "kvfit") return place_of(fs::path("include") / "kvfit" / rel.filename());
    place p{k_folders.count(folder) ? k_folders.at(folder) : -1, ""};
    if (folder == "runtimes" && std::next(second) != rel.end() && std::next(std::next(second)) != rel.end()) {
        p.runtime = std::next(second)->string();
    }
    return p;
}

// Where an included header sits: "kvfit/x.h" (public) or "<folder>/..." (a private header of src/).
place place_of_include(const std::string & inc) {
    if (inc.rfind("kvfit/", 0) == 0) {
        const std::string name = inc.substr(6);
        return {k_public.count(name) ? k_public.at(name) : -1, runtime_of_header(name)};
    }
    return place_of(fs::path("src") / inc);
}

TEST(layers, no_folder_includes_one_above_it) {
    const fs::path root = KVFIT_SOURCE_DIR;
    const std::regex include_re(R"re(^\s*#\s*include\s+"([^"]+)")re");
    size_t files = 0, includes = 0;
    for (const char * dir : {"src", "include/kvfit", "app"}) {
        for (const auto & e : fs::recursive_directory_iterator(root / dir)) {
            const std::string ext = e.path().extension().string();
            if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h")) continue;
            const fs::path rel = fs::relative(e.path(), root);
            const place from = place_of(rel);
            ASSERT_GE(from.layer, 0) << rel << ": not in a known layer (add its folder or header to test_layers.cpp)";
            ++files;
            std::ifstream in(e.path());
            std::smatch m;
            for (std::string line; std::getline(in, line);) {
                if (!std::regex_search(line, m, include_re)) continue;
                const std::string inc = m[1];
                // "kvfit/x.h", "<folder>/x.h" below src/, or "x.h" beside the file
                const place to = inc.find('/') == std::string::npos ? place_of(rel.parent_path() / inc) : place_of_include(inc);
                ++includes;
                EXPECT_GE(to.layer, 0) << rel << " includes \"" << inc << "\": a header of no known layer";
                EXPECT_LE(to.layer, from.layer) << rel << " includes \"" << inc << "\", a layer above it";
                const bool other_runtime = !from.runtime.empty() && !to.runtime.empty() && to.runtime != from.runtime &&
                                           from.runtime != "common" && to.runtime != "common";
                const bool allowed = from.runtime == "ollama" && to.runtime == "llamacpp";
                EXPECT_FALSE(other_runtime && !allowed) << rel << " includes \"" << inc << "\", another runtime's";
            }
        }
    }
    EXPECT_GT(files, 100u);
    EXPECT_GT(includes, 200u);
}

} // namespace
