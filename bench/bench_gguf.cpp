// Parsing the header-only Qwen3.5-9B-shaped GGUF (6.4 MB, 248,320-token vocabulary) from
// ../shared/reference/llamacpp/gguf/. Target: under 1 ms for open (map + parse) and for open + model mapping.
// Figures for comparison (issue 3, same machine kind): reading the bytes 0.16 ms, llama.cpp's C parser 55-72 ms,
// node-llama-cpp 238 ms, @huggingface/gguf 1,079 ms (bench/run.sh measures the last one again).
#include "kvfit/gguf.h"

#include <benchmark/benchmark.h>
#include <fstream>

namespace {

const std::string k_file = std::string(KVFIT_SHARED_DIR) + "/reference/llamacpp/gguf/qwen35-9b_v248320.gguf";

void gguf_open(benchmark::State & state) {
    for (auto _ : state) {
        auto f = kvfit::gguf_file::open(k_file);
        benchmark::DoNotOptimize(f.tensors().data());
    }
}
BENCHMARK(gguf_open)->Unit(benchmark::kMillisecond);

void gguf_open_and_model(benchmark::State & state) {
    for (auto _ : state) {
        kvfit::warnings warn;
        auto m = kvfit::model_from_gguf(k_file, warn);
        benchmark::DoNotOptimize(m.n_layer);
    }
}
BENCHMARK(gguf_open_and_model)->Unit(benchmark::kMillisecond);

// The parse alone, on bytes already in memory (no mapping, no page faults).
void gguf_parse_in_memory(benchmark::State & state) {
    std::ifstream in(k_file, std::ios::binary);
    const std::string buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (auto _ : state) {
        auto f = kvfit::gguf_file::parse(buf, k_file);
        benchmark::DoNotOptimize(f.tensors().data());
    }
}
BENCHMARK(gguf_parse_in_memory)->Unit(benchmark::kMillisecond);

// Baseline: copying the file's bytes into memory with one read.
void read_bytes(benchmark::State & state) {
    std::string buf;
    for (auto _ : state) {
        std::ifstream in(k_file, std::ios::binary);
        in.seekg(0, std::ios::end);
        buf.resize(size_t(in.tellg()));
        in.seekg(0);
        in.read(buf.data(), std::streamsize(buf.size()));
        benchmark::DoNotOptimize(buf.data());
    }
}
BENCHMARK(read_bytes)->Unit(benchmark::kMillisecond);

} // namespace
