// llama.cpp's fit (common/fit.cpp common_params_fit_impl, v0.5.0; tools/fit-params) on kvfit's figures: what
// `kvfit fit-params` prints (app/cli_fit_params.cpp parses and prints; the rule is here). Declared in kvfit/llamacpp.h.
//   memory data   common_get_device_memory_data_impl: per device model (weights), context (KV caches + recurrent
//                 state: llama_context::memory_breakdown) and compute (the scheduler's buffer), the host last; the
//                 output (logits) buffer is in none of them (memory_breakdown_print calls it unaccounted).
//   fit           step 1: no change when every device keeps its --fit-target free; step 2: with -c unset, the context
//                 interpolated linearly between --fit-ctx and n_ctx_train x sequences (rounded down to 256 x streams)
//                 from the projected totals (fit.cpp:394-431; --fit-ctx 0 sets n_ctx 0, the training context, as
//                 fit.cpp:414 does); step 3: layers: the largest -ngl for a dense model, the fewest blocks whose routed
//                 experts stay on the CPU for a MoE model (fit.cpp's LAYER_FRACTION_MOE -ot patterns) -- the
//                 whole-tensor partial layers of fit.cpp's step 3 are not reproduced.
#include "kvfit/llamacpp.h"
#include "core/util.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvfit {

std::vector<llamacpp_device_memory> llamacpp_device_memory_data(const model_desc & m, const llamacpp_settings & s,
                                                                const placement_settings & p,
                                                                const std::vector<device_spec> & gpus) {
    const llamacpp_plan plan = plan_llamacpp(m, s, p, gpus, 0);
    std::vector<llamacpp_device_memory> out;
    for (size_t i = 0; i < plan.devices.size(); ++i) {
        const device_usage & d = plan.devices[i];
        // the fit measures in no_alloc mode: the prompt graph alone, sized by ggml_backend_sched_reserve_size, which
        // resets the scheduler first and so without the graph callback's norm / l_last pins (compute_sched.cpp); a
        // real context allocates the pinned graphs, which can differ per GPU
        const uint64_t compute = plan.gpu_compute.replayed && i < plan.gpu_compute.prompt_bytes.size()
                                     ? plan.gpu_compute.prompt_bytes[i] + d.spec.compute_bytes
                                     : d.used.compute_bytes;
        out.push_back({d.used.weights_bytes, d.used.kv_bytes + d.used.state_bytes, compute});
    }
    if (out.empty() || !plan.devices.back().is_host) out.push_back({}); // the host line is always printed
    return out;
}

namespace {

bool all_fit(const std::vector<llamacpp_device_memory> & dmd, const std::vector<device_spec> & gpus,
             const std::vector<int64_t> & margins) {
    for (size_t id = 0; id < gpus.size(); ++id) {
        if (int64_t(gpus[id].memory_bytes) - int64_t(dmd[id].total()) < margins[id]) return false;
    }
    return true;
}

} // namespace

llamacpp_fit_result llamacpp_fit_params(const model_desc & m, llamacpp_settings s, const placement_settings & p,
                                        const std::vector<device_spec> & gpus, const std::vector<uint64_t> & targets,
                                        uint64_t fit_ctx, std::optional<int32_t> ngl_given) {
    const size_t nd = gpus.size();
    if (nd == 0) throw llamacpp_fit_failure("no GPU given or detected (--gpu): kvfit fits device memory only");
    std::vector<int64_t> margins(nd, int64_t(1024 * detail::MiB));
    if (targets.size() == 1) std::fill(margins.begin(), margins.end(), int64_t(targets[0]));
    else for (size_t i = 0; i < targets.size() && i < nd; ++i) margins[i] = int64_t(targets[i]);

    const uint32_t n_seq_max = std::max<uint32_t>(1, s.n_seq);
    const uint32_t n_streams = s.kv_unified ? 1 : n_seq_max;
    const bool n_ctx_auto = s.n_ctx == 0;
    const uint64_t n_ctx_max = std::min<uint64_t>(m.n_ctx_train * n_seq_max, UINT32_MAX);
    const uint64_t n_ctx_min_total = std::min<uint64_t>(fit_ctx * n_streams, UINT32_MAX);
    if (n_ctx_auto) s.n_ctx = n_ctx_max;

    llamacpp_fit_result r;
    r.n_gpu_layers = p.n_gpu_layers;
    // step 1
    std::vector<llamacpp_device_memory> full = llamacpp_device_memory_data(m, s, p, gpus);
    r.n_ctx = s.n_ctx;
    if (all_fit(full, gpus, margins)) return r;
    int64_t sum_free = 0, sum_used = 0, sum_model = 0;
    for (size_t id = 0; id < nd; ++id) {
        sum_free += int64_t(gpus[id].memory_bytes);
        sum_used += int64_t(full[id].total());
        sum_model += int64_t(full[id].model);
    }
    // step 2
    int64_t surplus = sum_free - sum_used;
    for (int64_t mg : margins) surplus -= mg;
    if (surplus < 0 && n_ctx_auto && n_ctx_max > n_ctx_min_total) {
        int64_t target = sum_free;
        for (int64_t mg : margins) target -= mg;
        if (nd > 1) {
            const int64_t per_layer = sum_model / std::min<int64_t>(p.n_gpu_layers < 0 ? INT32_MAX : p.n_gpu_layers, m.n_layer);
            target -= int64_t(nd + 1) * per_layer / (m.n_expert == 0 ? 2 : 6);
        }
        s.n_ctx = n_ctx_min_total;
        const std::vector<llamacpp_device_memory> small = llamacpp_device_memory_data(m, s, p, gpus);
        int64_t used_min = 0;
        for (size_t id = 0; id < nd; ++id) used_min += int64_t(small[id].total());
        if (target > used_min) {
            s.n_ctx += uint64_t(int64_t(n_ctx_max - n_ctx_min_total) * (target - used_min) / (sum_used - used_min));
            const uint64_t align = 256ull * n_streams;
            s.n_ctx = std::max(s.n_ctx - s.n_ctx % align, n_ctx_min_total);
            r.n_ctx = s.n_ctx;
            if (nd <= 1) return r;
        }
        r.n_ctx = s.n_ctx;
    }
    // step 3: preconditions as fit.cpp
    if (ngl_given) throw llamacpp_fit_failure(fmt::format("n_gpu_layers already set by user to {}, abort", *ngl_given));
    if (nd > 1 && !p.tensor_split.empty()) throw llamacpp_fit_failure("model_params::tensor_split already set by user, abort");
    if (!p.override_tensor_cpu.empty() || p.cpu_moe || p.n_cpu_moe > 0) {
        throw llamacpp_fit_failure("model_params::tensor_buft_overrides already set by user, abort");
    }
    auto fits_with = [&](const placement_settings & q) { return all_fit(llamacpp_device_memory_data(m, s, q, gpus), gpus, margins); };
    const uint32_t n_all = m.n_layer + 1; // blocks and the output layer (llama.cpp counts it in -ngl)
    placement_settings q = p;
    bool found = false;
    if (m.n_expert > 0) {
        // experts of the first N blocks on the CPU, every layer offloaded: the smallest N that fits
        q.n_gpu_layers = int32_t(n_all);
        for (uint32_t n = 0; n <= m.n_layer && !found; ++n) {
            q.n_cpu_moe = n;
            found = fits_with(q);
        }
    }
    if (!found) {
        // dense layers (a MoE model with every expert on the CPU): the largest -ngl that fits
        for (int32_t ngl = int32_t(n_all); ngl >= 0 && !found; --ngl) {
            q.n_gpu_layers = ngl;
            found = fits_with(q);
        }
    }
    if (!found) throw llamacpp_fit_failure("cannot fit even with no layer on the GPUs");
    r.n_gpu_layers = q.n_gpu_layers;
    for (uint32_t il = 0; il < q.n_cpu_moe && il < m.n_layer; ++il) {
        if (m.is_moe.empty() || m.is_moe[il]) r.overrides.push_back(fmt::format("blk\\.{}\\.ffn_(up|down|gate_up|gate)_(ch|)exps", il));
    }
    if (nd > 1) {
        const llamacpp_plan plan = plan_llamacpp(m, s, q, gpus, 0);
        for (size_t id = 0; id < nd; ++id) {
            r.tensor_split.push_back(plan.devices[id].n_layers + (plan.devices[id].has_output ? 1 : 0));
        }
    }
    return r;
}

} // namespace kvfit
