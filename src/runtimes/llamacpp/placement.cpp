// llama.cpp's placement of buffers on devices (include/kvfit/llamacpp.h: plan_llamacpp) and the largest n_ctx
// that fits. Placement reproduces llama.cpp src/llama-model.cpp load_tensors (i_gpu_start, act_gpu_layers, splits).
#include "kvfit/llamacpp.h"

#include "kvfit/error.h"
#include "kvfit/metal.h"
#include "kvfit/search.h"
#include "kvfit/units.h"
#include "runtimes/llamacpp/compute.h"

#include <algorithm>
#include <regex>
#include <fmt/format.h>

namespace kvfit {

// --- device usage -------------------------------------------------------------------------------------------

int64_t device_usage::free_bytes() const {
    return int64_t(capacity_bytes) - int64_t(margin_bytes) - int64_t(used.total());
}

bool device_usage::fits() const { return is_host || used.total() + margin_bytes <= capacity_bytes; }

bool llamacpp_plan::fits() const {
    return std::all_of(devices.begin(), devices.end(), [](const device_usage & d) { return d.fits(); });
}

// --- placement ----------------------------------------------------------------------------------------------

namespace {

// Device index of every layer 0..n_layer_all (the last one is the output layer); -1 = CPU.
// llama.cpp: i_gpu_start = max(n_layer_all + 1 - ngl, 0); act = min(ngl, n_layer_all + 1);
// layer il on GPU iff il >= i_gpu_start && il - i_gpu_start < act;
// device = upper_bound(cumulative split fractions, (il - i_gpu_start) / act).
std::vector<int> assign_layers(uint32_t n_layer_all, int32_t ngl, const std::vector<double> & split) {
    std::vector<int> dev(n_layer_all + 1, -1);
    if (split.empty()) return dev;
    const int n_all = int(n_layer_all);
    const int n_gpu = ngl < 0 ? n_all + 1 : ngl;
    const int i_gpu_start = std::max(n_all + 1 - n_gpu, 0);
    const int act = std::min(n_gpu, n_all + 1);
    std::vector<float> cum(split.size());
    double sum = 0;
    for (size_t i = 0; i < split.size(); ++i) sum += split[i];
    double run = 0;
    for (size_t i = 0; i < split.size(); ++i) {
        run += split[i];
        cum[i] = float(run / sum);
    }
    for (int il = 0; il <= n_all; ++il) {
        if (il < i_gpu_start || il - i_gpu_start >= act) continue;
        const float x = float(il - i_gpu_start) / float(act);
        const auto it = std::upper_bound(cum.begin(), cum.end(), x);
        dev[il] = int(std::min<ptrdiff_t>(it - cum.begin(), ptrdiff_t(split.size()) - 1));
    }
    return dev;
}

bool matches_override(const placement_settings & p, const std::string & name) {
    for (const auto & pattern : p.override_tensor_cpu) {
        if (std::regex_search(name, std::regex(pattern))) return true;
    }
    return false;
}

// --cpu-moe is -ot "\\.ffn_(up|down|gate)_exps=CPU"; --n-cpu-moe N the same for blocks 0..N-1 (common/arg.cpp).
bool experts_on_cpu(const placement_settings & p, uint32_t il) {
    return p.cpu_moe || il < p.n_cpu_moe ||
           (!p.override_tensor_cpu.empty() && matches_override(p, fmt::format("blk.{}.ffn_up_exps.weight", il)));
}

bool block_on_cpu(const placement_settings & p, uint32_t il) {
    return !p.override_tensor_cpu.empty() && matches_override(p, fmt::format("blk.{}.attn_q.weight", il));
}

// The tensors llama.cpp keeps in host memory under this placement: the input layer, the blocks and the output layer
// -ngl leaves on the CPU, and the expert / other tensors of offloaded blocks that --cpu-moe, --n-cpu-moe or -ot move
// (by the same representative names as the byte sums above). MTP/NextN blocks are not placed (not in the totals).
std::vector<weight_tensor> host_tensors(const model_desc & m, const placement_settings & p, const std::vector<int> & dev,
                                        uint32_t n_layer_all) {
    std::vector<weight_tensor> out;
    for (const auto & t : m.weights.tensors) {
        bool host = false;
        if (t.layer == weight_tensor::input) host = true;
        else if (t.layer == weight_tensor::output) host = dev[n_layer_all] < 0;
        else if (uint32_t(t.layer) < m.n_layer) {
            const uint32_t il = uint32_t(t.layer);
            // an offloaded block keeps a tensor on the host only under --cpu-moe, --n-cpu-moe or -ot (the tests of
            // experts_on_cpu / block_on_cpu): without them its name is not looked at
            const bool moved = p.cpu_moe || il < p.n_cpu_moe || !p.override_tensor_cpu.empty();
            host = dev[il] < 0 ||
                   (moved && (t.name.find("_exps") != std::string::npos ? experts_on_cpu(p, il) : block_on_cpu(p, il)));
        }
        if (host) out.push_back(t);
    }
    // a tied output head is token_embd loaded again as the output layer's MUL_MAT weight (TENSOR_DUPLICATED: the
    // loader's buft_for_tensor tests it as LLM_TENSOR_OUTPUT, llama-model-loader.cpp:1166)
    if (m.tied_embeddings && dev[n_layer_all] < 0) {
        for (const auto & t : m.weights.tensors) {
            if (t.name != "token_embd.weight") continue;
            weight_tensor o = t;
            o.name = "output.weight";
            o.layer = weight_tensor::output;
            o.duplicate = true;
            out.push_back(o);
        }
    }
    return out;
}

/// token_embd.weight's bytes padded to 32 (its tensor), else the input-layer group's share of n_embd x n_vocab
uint64_t tied_head_bytes(const model_desc & m) {
    for (const auto & t : m.weights.tensors) {
        if (t.name == "token_embd.weight") return (t.bytes + 31) / 32 * 32;
    }
    const weight_group & te = m.weights.token_embd;
    const uint64_t ne = uint64_t(m.n_embd) * m.n_vocab;
    if (te.n_params == 0 || ne >= te.n_params) return te.bytes;
    return uint64_t(double(te.bytes) * double(ne) / double(te.n_params));
}

} // namespace

uint64_t llamacpp_tied_duplicate_bytes(const model_desc & m) {
    if (!m.tied_embeddings || !m.weights.exact) return 0;
    if (!m.arch.tied_output_first) return 0;
    const weight_group & te = m.weights.token_embd;
    const uint64_t ne = uint64_t(m.n_embd) * m.n_vocab;
    if (te.n_params == 0 || ne > te.n_params) return 0;
    return te.n_params == ne ? te.bytes : uint64_t(double(te.bytes) * double(ne) / double(te.n_params));
}

llamacpp_plan plan_llamacpp(const model_desc & m, const llamacpp_settings & s, const placement_settings & p,
                            const std::vector<device_spec> & gpus_given, uint64_t margin_bytes, llamacpp_plan_purpose purpose) {
    llamacpp_plan plan;
    plan.settings = s;
    plan.purpose = purpose;
    const bool lower_bound = purpose == llamacpp_plan_purpose::lower_bound;
    // an Apple GPU: ggml-metal reports recommendedMaxWorkingSetSize as the device's total and free memory
    // (ggml-metal-device.m ggml_metal_device_get_memory), which -fit and the layer split budget from
    const std::vector<device_spec> gpus = metal_budget(gpus_given, s.iogpu_wired_limit_mb, plan.notes);
    plan.placement = p;
    plan.ctx = llamacpp_context_size(m, s);
    std::vector<uint64_t> kv_bytes; // per layer (llamacpp_kv_bytes_by_layer), from the same pass
    plan.kv = detail::kv_caches_by_layer(m, s, plan.ctx, &kv_bytes);
    plan.rs = llamacpp_recurrent(m, plan.ctx);

    // -ts: common/arg.cpp --tensor-split sets the devices past the list to 0.0f (fewer proportions than GPUs: those
    // GPUs hold no layer); more proportions than the GPUs given is refused (a GPU missing from --gpu, most likely)
    if (p.tensor_split.size() > gpus.size()) {
        throw error(fmt::format("-ts: {} proportions for {} GPUs", p.tensor_split.size(), gpus.size()));
    }
    for (const auto & g : gpus) {
        if (g.memory_bytes < (64ull << 20)) {
            throw error(fmt::format("--gpu: {} has {} B; a GPU has at least 64 MiB (did you forget a unit, e.g. 8GiB?)",
                                    g.name, g.memory_bytes));
        }
        if (margin_bytes >= g.memory_bytes) {
            throw error(fmt::format("--margin {} is not less than {}'s {} of memory", human_bytes(margin_bytes), g.name,
                                    human_bytes(g.memory_bytes)));
        }
        plan.devices.push_back({g.name, false, g.memory_bytes, margin_bytes, 0, false, {}, {}});
    }
    plan.devices.push_back({"host", true, 0, 0, 0, false, {}, {}});
    device_usage & host = plan.devices.back();

    std::vector<double> split = p.tensor_split;
    split.resize(split.empty() ? 0 : gpus.size(), 0.0);
    // every proportion 0 (or none given): llama.cpp splits by free memory (llama-model.cpp load_tensors: all_zero)
    if (std::all_of(split.begin(), split.end(), [](double x) { return x == 0.0; })) {
        split.clear();
        for (const auto & g : gpus) split.push_back(double(g.memory_bytes));
    }
    const uint32_t n_layer_all = m.n_layer + m.n_layer_mtp;
    const std::vector<int> dev = assign_layers(n_layer_all, p.n_gpu_layers, split);
    auto at = [&](int d) -> device_usage & { return d < 0 ? host : plan.devices[size_t(d)]; };

    host.used.weights_bytes += m.weights.token_embd.bytes + m.weights.other.bytes; // input layer: always CPU
    // with mmap and every tensor on the CPU, the mapped range also holds the skipped tensors between loaded ones
    // (model_weights::mmap_hole_bytes); with GPUs the CPU range covers the host tensors only: not modelled there
    if (p.mmap && gpus.empty()) host.used.weights_bytes += m.weights.mmap_hole_bytes;
    // no recurrent state, no compressor state: every layer's state is 0 B (llamacpp_state_layer_bytes)
    const bool any_state = plan.rs.r_bytes + plan.rs.s_bytes + plan.rs.p_bytes + plan.rs.comp_bytes > 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        device_usage & d = at(dev[il]);
        const weight_group & w = m.weights.layers.at(il);
        const bool cpu_experts = experts_on_cpu(p, il) && !d.is_host;
        const bool cpu_rest = block_on_cpu(p, il) && !d.is_host;
        const uint64_t experts = w.expert_bytes, rest = w.bytes - w.expert_bytes;
        (cpu_experts ? host : d).used.weights_bytes += experts;
        (cpu_rest ? host : d).used.weights_bytes += rest;
        const uint32_t host_index = uint32_t(plan.devices.size() - 1);
        const uint32_t d_index = dev[il] < 0 ? host_index : uint32_t(dev[il]);
        plan.layer_device.push_back(d_index);
        plan.weight_device.push_back(cpu_rest ? host_index : d_index);
        plan.expert_device.push_back(cpu_experts ? host_index : d_index);
        d.n_layers += 1;
        device_usage & cache_dev = p.no_kv_offload ? host : d;
        cache_dev.used.kv_bytes += kv_bytes[il];
        if (any_state) cache_dev.used.state_bytes += llamacpp_state_layer_bytes(m, plan.ctx, il);
    }
    for (uint32_t il = m.n_layer; il < n_layer_all; ++il) { // MTP blocks: only DeepSeek-V4 gives them a cache
        (p.no_kv_offload ? host : at(dev[il])).used.kv_bytes += kv_bytes[il];
    }
    device_usage & out_dev = at(dev[n_layer_all]);
    uint64_t in_mtp_blocks = 0; // created with an MTP block (model_weights::output_in_mtp_blocks): on that block's device
    for (size_t k = 0; k < m.weights.output_in_mtp_blocks.size(); ++k) {
        const uint64_t b = std::min(m.weights.output_in_mtp_blocks[k], m.weights.output.bytes - in_mtp_blocks);
        const uint32_t il = m.n_layer + uint32_t(k);
        (il < n_layer_all ? at(dev[il]) : out_dev).used.weights_bytes += b;
        in_mtp_blocks += b;
    }
    out_dev.used.weights_bytes += m.weights.output.bytes - in_mtp_blocks;
    out_dev.has_output = true;
    // a tied output head on a GPU: token_embd created again as the output layer's weight (TENSOR_DUPLICATED) in
    // that GPU's buffer, a copy of its own (llama-model.cpp create_tensor; measured on a simulated CUDA device:
    // gemma-4-26B-A4B's 262,144-row head, 144,180,352 B on CUDA0)
    if (m.tied_embeddings && dev[n_layer_all] >= 0) out_dev.used.weights_bytes += tied_head_bytes(m);
    // without mmap, a head created before token_embd is a second copy in the host buffer (llamacpp_tied_duplicate_bytes)
    if (!p.mmap && dev[n_layer_all] < 0) host.used.weights_bytes += llamacpp_tied_duplicate_bytes(m);
    // rope_freqs: created by every block that uses it (rope_freqs_blocks: every block, gemma4's full-attention blocks
    // only), a duplicate of the first one's within one buffer and a copy of its own in every other buffer that holds
    // such a block (llama-model.cpp TENSOR_DUPLICATED; measured: Step-3.7-Flash's 256 B on each GPU; gemma4-s15's
    // 1,024 B on no GPU whose layers are all window layers, -ts 3,1,1,1 on 4 simulated GPUs)
    for (const auto & t : m.weights.tensors) {
        if (t.name != "rope_freqs.weight" || t.layer < 0 || uint32_t(t.layer) >= plan.weight_device.size()) continue;
        const std::vector<uint8_t> rf = rope_freqs_blocks(m);
        std::vector<uint8_t> holds(plan.devices.size(), 0);
        for (uint32_t il = 0; il < m.n_layer && il < plan.weight_device.size(); ++il) {
            if (rf[il]) holds[plan.weight_device[il]] = 1;
        }
        for (size_t d = 0; d < plan.devices.size(); ++d) {
            if (holds[d] && d != plan.weight_device[size_t(t.layer)]) plan.devices[d].used.weights_bytes += (t.bytes + 31) / 32 * 32;
        }
    }

    // host weights tensor by tensor: what the CPU backend's extra buffers add over the plain buffer
    if (!m.weights.tensors.empty()) {
        const std::vector<weight_tensor> on_host = host_tensors(m, p, dev, n_layer_all);
        plan.extra_buffers_used = p.repack && (gpus.empty() || p.no_host);
        cpu_features plain = p.cpu;
        plain.avx2 = plain.avx512 = plain.amx = false; // no weight moves
        const cpu_weight_buffers base = llamacpp_cpu_weight_buffers(on_host, plain, p.mmap);
        plan.host_weights = plan.extra_buffers_used ? llamacpp_cpu_weight_buffers(on_host, p.cpu, p.mmap) : base;
        plan.host_weights_exact = true;
        // the groups' sums stay the figure when nothing moves (each tensor unpadded); the moves add their difference
        host.used.weights_bytes += plan.host_weights.total() - base.total();
    }
    host.used.output_bytes = llamacpp_output_bytes(m, plan.ctx);

    // The scheduler reserves a compute buffer on every backend that runs part of the graph. With GPUs the backend's
    // figures follow (llamacpp_apply_backend_terms): the scheduler replay, else the CPU graph on every backend that
    // runs part of it (llamacpp_place_graph_compute) with the backend's terms
    if (gpus.empty() && !lower_bound) host.used.compute_bytes = llamacpp_compute_bytes(m, s, plan.ctx);

    llamacpp_place_extras(m, plan); // --mmproj, --lora (llamacpp_extras.h)

    plan.n_gpu_layers = 0;
    for (int d : dev) plan.n_gpu_layers += d >= 0;
    if (lower_bound) { // the search's pre-check (llamacpp_plan_purpose::lower_bound): no compute, no terms
        for (const auto & d : plan.devices) plan.total += d.used;
        return plan;
    }
    // the backend (--backend, or from the GPUs) and its terms on the GPUs' buffers (compute_cuda.cpp)
    llamacpp_apply_backend_terms(plan, m, gpus);
    for (const auto & d : plan.devices) plan.total += d.used;
    // speculative decoding: the MTP context or the draft model, on their devices (spec.cpp)
    llamacpp_add_spec(m, gpus, plan);
    return plan;
}

void llamacpp_place_graph_compute(llamacpp_plan & plan, const model_desc & m) {
    const uint64_t compute = llamacpp_compute_bytes(m, plan.settings, plan.ctx);
    device_usage & host = plan.devices.back();
    bool host_runs_layers = false;
    for (auto & d : plan.devices) {
        if (d.is_host) continue;
        if (d.n_layers > 0 || d.has_output) d.used.compute_bytes = compute;
    }
    // the host runs a part: a block (-ngl below the blocks) or the output layer (-ngl 0)
    const uint32_t host_index = uint32_t(plan.devices.size() - 1);
    for (const uint32_t d : plan.layer_device) host_runs_layers |= d == host_index;
    host_runs_layers |= host.has_output;
    if (host_runs_layers || plan.devices.size() == 1) host.used.compute_bytes = compute;
}

bool llamacpp_fits(const model_desc & m, const llamacpp_settings & s, const placement_settings & p,
                   const std::vector<device_spec> & gpus, uint64_t margin_bytes, bool check_host_ram) {
    const auto fits = [&](const llamacpp_plan & plan) {
        return plan.fits() && (!check_host_ram || s.ram_bytes == 0 || !llamacpp_host_ram(m, plan).over);
    };
    // the lower bound first: each figure it leaves out only adds bytes to a device already placed
    return fits(plan_llamacpp(m, s, p, gpus, margin_bytes, llamacpp_plan_purpose::lower_bound)) &&
           fits(plan_llamacpp(m, s, p, gpus, margin_bytes, llamacpp_plan_purpose::verdict));
}

uint64_t max_fitting_n_ctx(const model_desc & m, llamacpp_settings s, const placement_settings & p,
                           const std::vector<device_spec> & gpus, uint64_t margin_bytes, uint64_t limit) {
    const uint64_t step = 256ull * (s.kv_unified ? 1 : s.n_seq);
    uint64_t hi = limit ? limit : m.n_ctx_train;
    if (hi == 0) hi = 1ull << 20;
    const auto n = largest_fitting(step, hi, step, [&](uint64_t n_ctx) {
        s.n_ctx = n_ctx;
        return llamacpp_fits(m, s, p, gpus, margin_bytes);
    });
    return n.value_or(0);
}

} // namespace kvfit
