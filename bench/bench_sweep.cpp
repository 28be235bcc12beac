// The sweep a scheduler runs: 1,000 models x 50 GPU kinds, the largest context that fits for every pair, through
// the planner's one search (plan.h largest_context -> search.h) and the llama.cpp runtime's plan (runtime.h).
// Target (issue 16): the whole sweep under one second on the project machine (2 cores, shared).
//
// The models are synthetic rows built from the catalog's shapes: each catalog model with a parameter count, in each
// weight format of the GGUF ladder (f16 ... q2_k), at several training contexts (the search's top), cycled until
// there are 1,000. The GPUs are the first 50 rows of the GPU table (data/gpus.csv), one GPU per plan.
// Prints: the sweep's wall time, pairs, plans made (every probe of the search is one runtime plan), the cost per
// plan and per pair, and a checksum of the contexts found. Not a test: nothing is asserted on time (ctest never
// runs it). Usage: bench_sweep [--models N] [--gpus N] [--repeat N] [--threads N] (threads default 1; the models are
// split between them). CPU time is printed beside the wall time: on a shared machine the wall time includes waiting.
#include "kvfit/gpus.h"
#include "kvfit/plan.h"
#include "kvfit/runtime.h"
#include "kvfit/sources.h"

#include <algorithm>
#include <ctime>
#include <thread>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

thread_local uint64_t t_plans = 0; // plans made by this thread
kvfit::runtime_plan (*g_plan)(const kvfit::model_desc &, const kvfit::flag_values &, const kvfit::machine &) = nullptr;

bool (*g_fits)(const kvfit::model_desc &, const kvfit::flag_values &, const kvfit::machine &) = nullptr;

bool counted_fits(const kvfit::model_desc & m, const kvfit::flag_values & f, const kvfit::machine & mc) {
    ++t_plans;
    return g_fits(m, f, mc);
}

kvfit::runtime_plan counted_plan(const kvfit::model_desc & m, const kvfit::flag_values & f, const kvfit::machine & mc) {
    ++t_plans;
    return g_plan(m, f, mc);
}

std::vector<kvfit::model_desc> synthetic_models(size_t n) {
    const char * formats[] = {"f16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k"};
    const uint64_t contexts[] = {0, 8192, 32768, 131072}; // 0: the model's own training context
    std::vector<kvfit::model_desc> base;
    for (const auto & e : kvfit::catalog()) {
        kvfit::warnings warn;
        kvfit::model_desc m = kvfit::model_from_catalog(e, warn);
        if (m.n_params() > 0) base.push_back(std::move(m));
    }
    std::vector<kvfit::model_desc> out;
    for (size_t i = 0; out.size() < n; ++i) {
        kvfit::model_desc m = base[i % base.size()];
        const size_t variant = i / base.size();
        kvfit::apply_weight_format(m, formats[variant % 7], true);
        if (const uint64_t c = contexts[(variant / 7) % 4]; c) m.n_ctx_train = c;
        m.name += "#" + std::to_string(i);
        out.push_back(std::move(m));
    }
    return out;
}

} // namespace

int main(int argc, char ** argv) {
    size_t n_models = 1000, n_gpus = 50, repeat = 3, n_threads = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        const size_t v = std::strtoul(argv[i + 1], nullptr, 10);
        if (!std::strcmp(argv[i], "--models")) n_models = v;
        else if (!std::strcmp(argv[i], "--gpus")) n_gpus = v;
        else if (!std::strcmp(argv[i], "--repeat")) repeat = v;
        else if (!std::strcmp(argv[i], "--threads")) n_threads = std::max<size_t>(1, v);
    }
    const auto models = synthetic_models(n_models);
    std::vector<kvfit::machine> gpus;
    for (const auto & g : kvfit::gpu_table()) {
        if (gpus.size() == n_gpus) break;
        gpus.push_back(kvfit::machine{{kvfit::device_spec{g.name, g.memory_bytes, g.compute_capability}}});
    }
    kvfit::runtime_info rt = kvfit::find_runtime("llama.cpp");
    g_plan = rt.plan;
    g_fits = rt.fits;
    rt.plan = counted_plan;
    if (rt.fits) rt.fits = counted_fits; // the verdict alone (runtime.h), what the search calls
    const kvfit::flag_values flags; // llama-server's defaults: f16 cache, -np 1, every layer on the GPU
    double best = 1e99, best_cpu = 0;
    uint64_t plans = 0, checksum = 0, fitting = 0;
    for (size_t r = 0; r < repeat; ++r) {
        std::vector<uint64_t> n_plans(n_threads), sums(n_threads), fits(n_threads);
        const std::clock_t c0 = std::clock();
        const auto t0 = std::chrono::steady_clock::now();
        auto work = [&](size_t t) {
            t_plans = 0;
            for (size_t i = t; i < models.size(); i += n_threads) {
                for (const auto & mc : gpus) {
                    const uint64_t ctx = kvfit::largest_context(rt, models[i], flags, mc);
                    sums[t] += ctx;
                    fits[t] += ctx > 0;
                }
            }
            n_plans[t] = t_plans;
        };
        std::vector<std::thread> pool;
        for (size_t t = 1; t < n_threads; ++t) pool.emplace_back(work, t);
        work(0);
        for (auto & th : pool) th.join();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
        if (s < best) {
            best = s;
            best_cpu = cpu;
            plans = checksum = fitting = 0;
            for (size_t t = 0; t < n_threads; ++t) {
                plans += n_plans[t];
                checksum += sums[t];
                fitting += fits[t];
            }
        }
    }
    const size_t pairs = models.size() * gpus.size();
    std::printf("sweep: %zu models x %zu GPUs = %zu pairs, %llu fit at some context (checksum %llu)\n", models.size(),
                gpus.size(), pairs, (unsigned long long)fitting, (unsigned long long)checksum);
    std::printf("sweep: %.3f s wall (best of %zu, %zu thread%s; %.3f s CPU), %llu plans, %.2f us CPU per plan, "
                "%.2f us CPU per pair (%.1f plans per pair)\n", best, repeat, n_threads, n_threads == 1 ? "" : "s", best_cpu,
                (unsigned long long)plans, best_cpu * 1e6 / double(plans), best_cpu * 1e6 / double(pairs),
                double(plans) / double(pairs));
    return 0;
}
