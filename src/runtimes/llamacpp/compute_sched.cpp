// The compute buffers of a plan from llama.cpp's scheduler, replayed (compute.h: sched_compute): the reserve graph
// recorded from the real runtime (format-2 templates, graph_replay.cpp) with every weight and cache tensor placed as
// the plan places it, run through the scheduler's split and the graph allocator (sched.cpp) with the CUDA and CPU
// devices of the release (backend_cuda.cpp). llama.cpp reserves the prompt graph (n_ubatch tokens), the token graph
// (one token per sequence) and the prompt graph again; a buffer only grows, so each backend's compute buffer is the
// larger of the two graphs' (llama-context.cpp:690-730, ggml-alloc.c ggml_gallocr_reserve_n_impl). In no_alloc mode
// (node-llama-cpp's and llama.cpp's memory fit) only the first prompt reserve is sized: sched_compute::prompt.
#include "runtimes/llamacpp/compute.h"

#include "runtimes/llamacpp/backend_cuda.h"
#include "runtimes/llamacpp/backend_vulkan.h"
#include "runtimes/llamacpp/graph_replay.h"
#include "core/embedded.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <nlohmann/json.hpp>

namespace kvfit::detail {

namespace {

constexpr uint8_t k_flag_input = 1;

/// KVFIT_SCHED_EXPORT=FILE (a debugging aid for recorded templates): appends each graph the replay builds, its tensors
/// with their buffers and preset backends, in the GGML_SCHED_DUMP line format (tools/simcuda/sched_dump.inc), so that
/// tools/graph_template/gdiff.py can compare it with a tracing build's dump of the same context.
void export_graph(const ggraph & g, const std::vector<const sched_backend *> & backends, const sched_result & r) {
    const char * path = std::getenv("KVFIT_SCHED_EXPORT");
    if (path == nullptr || *path == 0) return;
    FILE * f = std::fopen(path, "a");
    if (f == nullptr) return;
    const auto buft_name = [](const gbuft & b) {
        return b.k == gbuft::kind::gpu ? "CUDA" + std::to_string(b.device) : b.k == gbuft::kind::gpu_host ? std::string("CUDA_Host") : std::string("CPU");
    };
    nlohmann::json h{{"k", "sched"}, {"n_backends", backends.size()}, {"backends", nlohmann::json::array()}};
    for (const sched_backend * b : backends) h["backends"].push_back({{"name", b->name()}, {"buft", buft_name(b->compute_buft())}});
    h["sizes"] = r.buffer_bytes;
    std::fprintf(f, "%s\n", h.dump().c_str());
    for (size_t i = 0; i < g.t.size(); ++i) {
        const gtensor & t = g.t[i];
        nlohmann::json j{{"k", "t"}, {"id", i}, {"name", t.name}, {"op", std::string(gop_name(t.op))},
                         {"type", ggml_traits(t.type).name}, {"ne", t.ne}, {"nb", t.nb}, {"flags", t.flags},
                         {"view_src", t.view_src}, {"view_offs", t.view_offs},
                         {"src", std::vector<int32_t>(t.src.begin(), t.src.end())}, {"params", t.params},
                         {"preset", t.preset}};
        if (t.buffer >= 0) j["buf"] = buft_name(g.buffers[size_t(t.buffer)].type), j["usage"] = g.buffers[size_t(t.buffer)].weights ? 1 : 0;
        else j["buf"] = nullptr;
        std::fprintf(f, "%s\n", j.dump().c_str());
    }
    std::fprintf(f, "%s\n", nlohmann::json{{"k", "order"}, {"leafs", g.leafs}, {"nodes", g.nodes}}.dump().c_str());
    nlohmann::json c{{"k", "copy"}, {"nodes", nlohmann::json::array()}};
    for (const auto & [i, b] : r.copy_nodes) c["nodes"].push_back({r.copy.t[size_t(i)].name, b});
    std::fprintf(f, "%s\n", c.dump().c_str());
    std::fclose(f);
}

/// The device index (into plan.devices) of each weight tensor of the instance, as placement.cpp places its group.
uint32_t weight_device(const model_desc & m, const llamacpp_plan & plan, const graph_instance & gi, size_t t,
                       const std::vector<std::vector<int32_t>> & users,
                       const std::unordered_map<std::string_view, const weight_tensor *> & by_name) {
    const uint32_t host = uint32_t(plan.devices.size() - 1);
    uint32_t out_dev = host;
    for (size_t d = 0; d + 1 < plan.devices.size(); ++d) {
        if (plan.devices[d].has_output) out_dev = uint32_t(d);
    }
    const std::string & name = gi.g.t[t].name; // a weight's name is its GGUF name
    // a device's own copy of rope_freqs (split_rope_freqs): in its first reader's layer's buffer
    if (name.rfind("rope_freqs", 0) == 0 && gi.layer[t] >= 0 && size_t(gi.layer[t]) < plan.weight_device.size()) {
        return plan.weight_device[size_t(gi.layer[t])];
    }
    const auto found = by_name.find(name);
    const weight_tensor * w = found == by_name.end() ? nullptr : found->second;
    // a weight the model does not list (a config.json's, a tied head's output.weight): its layer from its GGUF name
    // (llama-arch.cpp LLM_TENSOR_NAMES: blk.N.*, output*, else the input layer)
    weight_tensor named;
    if (w == nullptr) {
        named.name = name;
        if (name.rfind("blk.", 0) == 0) named.layer = int32_t(std::strtol(name.c_str() + 4, nullptr, 10));
        else if (name.rfind("output", 0) == 0) named.layer = weight_tensor::output;
        w = &named;
    }
    if (w == nullptr) return host;
    // a tied output head: token_embd again, created as the output layer's weight on its device
    if (m.tied_embeddings && name == "token_embd.weight") { // users: filled for a tied head
        for (const int32_t u : users[t]) {
            if (gi.g.t[size_t(u)].op == gop::mul_mat) return out_dev;
        }
    }
    if (w->layer == weight_tensor::output) return out_dev;
    if (w->layer >= 0 && uint32_t(w->layer) < m.n_layer && uint32_t(w->layer) < plan.weight_device.size()) {
        const bool expert = name.find("_exps") != std::string::npos;
        return (expert ? plan.expert_device : plan.weight_device)[size_t(w->layer)];
    }
    if (w->layer >= 0 && uint32_t(w->layer) >= m.n_layer) return out_dev; // NextN blocks: with the output layer
    // rope_freqs: a copy in each buffer (placement.cpp; split_rope_freqs gives a copy the layer of its first reader),
    // the tensor itself in the first block that creates it (rope_freqs_blocks: block 0, gemma4's first full layer)
    if (name.rfind("rope_freqs", 0) == 0 && !plan.weight_device.empty()) {
        const std::vector<uint8_t> rf = rope_freqs_blocks(m);
        const size_t first = size_t(std::find(rf.begin(), rf.end(), uint8_t(1)) - rf.begin());
        return plan.weight_device[first < plan.weight_device.size() ? first : 0];
    }
    return host;
}

/// llama.cpp creates rope_freqs once per weight buffer: each block that uses it calls create_tensor with
/// TENSOR_DUPLICATED, which returns the tensor already in that buffer type's context or makes a copy there
/// (llama_model_loader::create_tensor, llama-model-loader.cpp:1370-1376 v0.5.0), so a layer's ROPE reads the copy on
/// its own device. The recorded graph (the CPU build: one buffer) reads one tensor: a reader whose layer's weights
/// are on another device than that tensor gets that device's copy, a new leaf in the layer of its first reader (the
/// scheduler would otherwise copy rope_freqs into that device's split, a compute tensor llama.cpp does not have).
void split_rope_freqs(const model_desc & m, const llamacpp_plan & plan, graph_instance & gi,
                      const std::unordered_map<std::string_view, const weight_tensor *> & by_name) {
    ggraph & g = gi.g;
    const size_t n0 = g.t.size();
    for (size_t t = 0; t < n0; ++t) {
        if (!gi.weight[t] || g.t[t].name.rfind("rope_freqs", 0) != 0) continue;
        const uint32_t own = weight_device(m, plan, gi, t, {}, by_name);
        std::map<uint32_t, int32_t> copy; // device -> its copy
        for (size_t u = 0; u < n0; ++u) {
            const int32_t il = gi.layer[u];
            if (il < 0 || size_t(il) >= plan.weight_device.size() || plan.weight_device[size_t(il)] == own) continue;
            const uint32_t d = plan.weight_device[size_t(il)];
            for (size_t k = 0; k < g.t[u].src.size(); ++k) {
                if (g.t[u].src[k] != int32_t(t)) continue;
                auto it = copy.find(d);
                if (it == copy.end()) {
                    it = copy.emplace(d, int32_t(g.t.size())).first;
                    const gtensor c = g.t[t];
                    g.t.push_back(c); // g.t[u] is looked up again below: the push may move it
                    gi.layer.push_back(il);
                    gi.weight.push_back(gi.weight[t]);
                    gi.cache.push_back(0);
                    const auto at = std::find(g.leafs.begin(), g.leafs.end(), int32_t(t));
                    g.leafs.insert(at == g.leafs.end() ? at : at + 1, it->second);
                }
                g.t[u].src[k] = it->second;
            }
        }
    }
}

/// A tied output head (no output.weight: the output layer's MUL_MAT reads token_embd) is a second tensor on a GPU that
/// holds the output layer: llama.cpp creates it with TENSOR_DUPLICATED in the output layer's buffer type, which
/// returns the input layer's tensor only when the two buffer types are one (llama_model_loader::create_tensor,
/// llama-model-loader.cpp:1370-1376 v0.5.0; models/gemma3.cpp `output = tok_embd` duplicated when the GGUF has no
/// output.weight). A template recorded on the CPU build from tied shapes only (gemma3) reads one token_embd leaf for
/// both the input GET_ROWS and the output MUL_MAT; on a plan whose output layer is on a GPU the MUL_MAT readers get their
/// own leaf, which weight_device places on that GPU while the GET_ROWS keeps the input layer's host copy (measured:
/// gemma3-1b with every layer on one simulated GPU, the dump's token_embd.weight twice, CUDA_Host and CUDA0; with one
/// leaf the embeddings' get_rows ran on the GPU and CUDA_Host was one [n_embd, n_ubatch] f32 block short).
void split_tied_output(const model_desc & m, const llamacpp_plan & plan, graph_instance & gi) {
    if (!m.tied_embeddings) return;
    bool gpu_output = false;
    for (size_t d = 0; d + 1 < plan.devices.size(); ++d) gpu_output |= plan.devices[d].has_output;
    if (!gpu_output) return;
    ggraph & g = gi.g;
    const size_t n0 = g.t.size();
    for (size_t t = 0; t < n0; ++t) {
        if (!gi.weight[t] || g.t[t].name != "token_embd.weight") continue;
        bool rows = false, head = false;
        for (const int32_t n : g.nodes) {
            for (const int32_t x : g.t[size_t(n)].src) {
                if (x != int32_t(t)) continue;
                (g.t[size_t(n)].op == gop::mul_mat ? head : rows) = true;
            }
        }
        if (!rows || !head) continue; // already the output's own leaf (a template recorded with two: gemma4)
        const int32_t copy = int32_t(g.t.size());
        const gtensor c = g.t[t];
        g.t.push_back(c);
        gi.layer.push_back(gi.layer[t]);
        gi.weight.push_back(gi.weight[t]);
        gi.cache.push_back(0);
        const auto at = std::find(g.leafs.begin(), g.leafs.end(), int32_t(t));
        g.leafs.insert(at == g.leafs.end() ? at : at + 1, copy);
        for (const int32_t n : g.nodes) {
            if (g.t[size_t(n)].op != gop::mul_mat) continue;
            for (size_t k = 0; k < g.t[size_t(n)].src.size(); ++k) {
                if (g.t[size_t(n)].src[k] == int32_t(t)) g.t[size_t(n)].src[k] = copy;
            }
        }
    }
}

} // namespace

std::optional<sched_compute_result> sched_compute(const model_desc & m, const llamacpp_plan & plan,
                                                  const std::vector<device_spec> & gpus, std::string * why) {
    const llamacpp_settings & s = plan.settings;
    const placement_settings & p = plan.placement;
    const bool vulkan = plan.backend.backend == gpu_backend::vulkan;
    const bool gpu_modelled = plan.backend.backend == gpu_backend::cuda || plan.backend.backend == gpu_backend::rocm || vulkan;
    if (!gpus.empty() && !gpu_modelled) {
        if (why) *why = std::string("the ") + gpu_backend_name(plan.backend.backend) + " backend's answers are not modelled";
        return std::nullopt;
    }
    // ggml-vulkan of 5b4ebc5 reorders a split's nodes by other rules than v0.5.0's (no RMS_NORM patterns, no top-k
    // MoE allocation dependencies: ggml-vulkan.cpp:18012-18297 there), not modelled
    if (!gpus.empty() && vulkan && s.release != llamacpp_release::v0_5_0) {
        if (why) *why = "ggml-vulkan's graph_optimize of this release (5b4ebc5) is not modelled, only v0.5.0's";
        return std::nullopt;
    }
    const size_t n_gpu = gpus.size();
    const uint32_t host = uint32_t(plan.devices.size() - 1);
    // a model that lists no tensors (config.json, the catalog) gets the template's recorded weights: their shapes are
    // the model's, their types are not. A weight's type sizes the copy the scheduler makes of it when an op on a GPU
    // reads it from host memory (op offload, a partial -ngl), so only plans whose every weight-reading op runs beside
    // its weights are replayed for such a model: CPU only, or every layer and the output on GPUs with the KV there too
    if (m.weights.tensors.empty() && n_gpu > 0) {
        // --cpu-moe / --n-cpu-moe move routed experts only (common/arg.cpp: the ffn_(up|down|gate)_exps patterns):
        // on a model without experts they move nothing
        const bool experts_moved = m.n_expert > 0 && (p.cpu_moe || p.n_cpu_moe > 0);
        const bool all_on_gpus = plan.n_gpu_layers > m.n_layer + m.n_layer_mtp && !experts_moved &&
                                 p.override_tensor_cpu.empty() && !p.no_kv_offload;
        if (!all_on_gpus) {
            if (why) *why = "the model lists no tensors, and with weights in host memory their types (unknown) size the "
                            "copies op offload makes on the GPUs";
            return std::nullopt;
        }
    }
    sched_compute_result res;
    // the graphs llama.cpp reserves (llama-context.cpp sched_reserve): the prompt graph, the token graph, the prompt
    // graph again, each after graph_reserve's ggml_backend_sched_reset and the graph build, whose callback pins a
    // layer's norm / l_last (graph_get_cb); a no_alloc fit sizes the first alone, with ggml_backend_sched_reserve_size,
    // which resets the scheduler first and so drops those pins (ggml-backend.cpp:1961-1973, both releases)
    enum class pass { prompt_fit, prompt, token };
    std::vector<pass> passes{pass::prompt, pass::token};
    const uint32_t n_all_layers = m.n_layer + m.n_layer_mtp;
    const bool pins_ever = n_gpu > 0 && (plan.n_gpu_layers > n_all_layers || plan.ctx.n_ubatch < 32 || plan.ctx.n_seq < 32);
    // the no_alloc fit's reserve only sizes gpu_compute.prompt_bytes, which a verdict does not read (plan.purpose)
    if (pins_ever && plan.purpose == llamacpp_plan_purpose::report) passes.insert(passes.begin(), pass::prompt_fit);
    // each graph instantiated once (the prompt graph serves both prompt passes); a pass sets its buffers and pins anew
    std::optional<graph_instance> inst_pp, inst_tg;
    // the model's tensors by name (weight_device)
    std::unordered_map<std::string_view, const weight_tensor *> by_name; // hashed: a GGUF lists hundreds of tensors
    by_name.reserve(m.weights.tensors.size());
    for (const weight_tensor & w : m.weights.tensors) by_name.emplace(w.name, &w);
    for (const pass ps : passes) {
        const bool tg = ps == pass::token;
        std::optional<graph_instance> & inst = tg ? inst_tg : inst_pp;
        if (!inst) {
            inst = instantiate_graph(m, s, plan.ctx, tg, why);
            if (inst && n_gpu > 0) split_rope_freqs(m, plan, *inst, by_name);
            if (inst && n_gpu > 0) split_tied_output(m, plan, *inst);
        }
        if (!inst) return std::nullopt;
        graph_instance & gi = *inst;
        ggraph & g = gi.g;
        g.buffers.clear();
        for (gtensor & t : g.t) t.buffer = -1, t.preset = -1;
        // buffers: per GPU its weights and its caches; the host's weights (pinned host type with GPUs and no mmap,
        // CPU_Mapped with mmap: host memory either way) and caches
        for (size_t d = 0; d < n_gpu; ++d) {
            g.buffers.push_back({{gbuft::kind::gpu, int(d)}, true});
            g.buffers.push_back({{gbuft::kind::gpu, int(d)}, false});
        }
        const gbuft host_type = n_gpu > 0 && !p.mmap ? gbuft{gbuft::kind::gpu_host, 0} : gbuft{gbuft::kind::cpu, 0};
        g.buffers.push_back({host_type, true});
        g.buffers.push_back({{gbuft::kind::cpu, 0}, false});
        auto buffer_of = [&](uint32_t dev, bool weights) {
            return dev >= n_gpu ? int32_t(2 * n_gpu + (weights ? 0 : 1)) : int32_t(2 * dev + (weights ? 0 : 1));
        };
        // each tensor's users: weight_device reads them for a tied head's token_embd alone, so only then
        std::vector<std::vector<int32_t>> users(m.tied_embeddings ? g.t.size() : 0);
        if (m.tied_embeddings) {
            for (const int32_t n : g.nodes) {
                for (const int32_t x : g.t[size_t(n)].src) {
                    if (x >= 0) users[size_t(x)].push_back(n);
                }
            }
        }
        for (size_t t = 0; t < g.t.size(); ++t) {
            if (gi.weight[t]) g.t[t].buffer = buffer_of(weight_device(m, plan, gi, t, users, by_name), true);
            else if (gi.cache[t]) {
                const int32_t il = gi.layer[t];
                const uint32_t dev = p.no_kv_offload || il < 0 || size_t(il) >= plan.layer_device.size() ? host
                                                                                                         : plan.layer_device[size_t(il)];
                g.t[t].buffer = buffer_of(dev, false);
            }
        }
        // the backends: the GPUs in order, the CPU last
        std::vector<std::unique_ptr<sched_backend>> own;
        std::vector<const sched_backend *> backends;
        // Vulkan_Host, the CPU backend's compute buffer type with Vulkan GPUs, aligns to the first Vulkan device's
        // minMemoryMapAlignment (ggml-vulkan.cpp:12845-12849 v0.5.0)
        uint64_t host_alignment = 32;
        for (size_t d = 0; d < n_gpu; ++d) {
            if (vulkan) {
                vulkan_device vd;
                vd.index = int(d);
                vd.limits = vulkan_limits_of(gpus[d].vendor);
                if (d == 0) host_alignment = vd.limits.host_alignment;
                if (res.assumed.find(vd.limits.assumed) == std::string::npos) {
                    res.assumed += (res.assumed.empty() ? "" : "; ") + vd.limits.assumed;
                }
                own.push_back(std::make_unique<vulkan_backend>(std::move(vd)));
                continue;
            }
            cuda_device cd;
            cd.index = int(d);
            cd.cc = gpus[d].compute_capability > 0 ? int(gpus[d].compute_capability * 100 + 0.5) : 890;
            cd.release = s.release == llamacpp_release::v0_5_0 ? cuda_release::v0_5_0 : cuda_release::r5b4ebc5;
            own.push_back(std::make_unique<cuda_backend>(cd));
        }
        own.push_back(std::make_unique<cpu_backend>(n_gpu > 0, host_alignment));
        for (auto & b : own) backends.push_back(b.get());
        // llama.cpp's graph callback (llama-context.cpp graph_get_cb): with fewer than 32 tokens or every layer and the
        // output offloaded, a layer's "norm" and "l_last" run on the layer's device when it supports them
        const uint32_t n_all = m.n_layer + m.n_layer_mtp;
        const uint64_t n_tokens = tg ? std::max<uint32_t>(1, plan.ctx.n_seq) : 0;
        const bool full_offload = plan.n_gpu_layers > n_all;
        const bool pin = ps != pass::prompt_fit && (full_offload || (tg ? n_tokens < 32 : plan.ctx.n_ubatch < 32));
        if (pin) {
            for (size_t t = 0; t < g.t.size(); ++t) {
                const int32_t il = gi.layer[t];
                if (il < 0) continue;
                // the name is "norm-<il>" or "l_last-<il>" (compared in place: no string built per tensor)
                std::string_view nm = g.t[t].name;
                if (nm.rfind("norm-", 0) == 0) nm.remove_prefix(5);
                else if (nm.rfind("l_last-", 0) == 0) nm.remove_prefix(7);
                else continue;
                char digits[16];
                const auto end = std::to_chars(digits, digits + sizeof digits, il).ptr;
                if (nm != std::string_view(digits, size_t(end - digits))) continue;
                const uint32_t dev = size_t(il) < plan.layer_device.size() ? plan.layer_device[size_t(il)] : host;
                const int b = dev >= n_gpu ? int(n_gpu) : int(dev);
                if (backends[size_t(b)]->supports_op(g, int32_t(t))) g.t[t].preset = int16_t(b);
            }
        }
        sched_options o;
        // pipeline parallelism (llama-context.cpp:429-456): several GPUs, every layer and the output offloaded, split
        // mode layer, KV offloaded, no tensor overrides; CUDA reports async and events
        const bool overrides = !p.override_tensor_cpu.empty() || p.cpu_moe || p.n_cpu_moe > 0;
        o.n_copies = n_gpu > 1 && full_offload && !p.no_kv_offload && !overrides ? 4 : 1;
        o.op_offload = s.op_offload;
        o.split_inputs_capped = s.release != llamacpp_release::v0_5_0;
        // the instance's last pass (the prompt graph serves the prompt passes, the token graph one) hands its graph
        // over instead of copying it; KVFIT_SCHED_EXPORT reads the graph after the reserve, so it keeps a copy
        const bool last_use = ps == pass::token || (ps == pass::prompt && !tg);
        static const bool exporting = [] {
            const char * e = std::getenv("KVFIT_SCHED_EXPORT");
            return e != nullptr && *e != 0;
        }();
        const sched_result r = last_use && !exporting ? sched_reserve(std::move(g), backends, o) : sched_reserve(g, backends, o);
        if (exporting) export_graph(g, backends, r);
        std::vector<uint64_t> per_device(plan.devices.size(), 0);
        for (size_t b = 0; b < backends.size(); ++b) per_device[b < n_gpu ? b : host] = r.buffer_bytes[b];
        // a Vulkan buffer type's get_max_size is the suballocation block (1 GiB by default, ggml-vulkan.cpp:12791-12794
        // v0.5.0): ggml-alloc holds a larger buffer in several chunks, which the replay's one-chunk allocator does not
        for (size_t d = 0; vulkan && d < n_gpu; ++d) {
            const uint64_t block = vulkan_limits_of(gpus[d].vendor).max_buffer_chunk; // Vulkan_Host's too (:12851-12854)
            if (per_device[d] > block || per_device[host] > block) {
                if (why) *why = "a Vulkan compute buffer past the 1 GiB suballocation block: ggml-alloc's chunks are not modelled";
                return std::nullopt;
            }
        }
        if (ps == pass::prompt_fit || (ps == pass::prompt && !pins_ever)) res.prompt = per_device;
        if (ps == pass::prompt) {
            res.bytes = per_device;
            res.variant = gi.variant;
            res.n_splits = r.n_splits;
            res.n_copies = o.n_copies;
        }
        if (ps == pass::token) res.token = per_device;
    }
    for (size_t d = 0; d < res.bytes.size(); ++d) res.bytes[d] = std::max(res.bytes[d], res.token[d]);
    return res;
}

std::string gpu_placement_class(const model_desc & m, const llamacpp_plan & plan) {
    const size_t n_gpu = plan.devices.empty() ? 0 : plan.devices.size() - 1;
    if (n_gpu == 0) return "";
    const placement_settings & p = plan.placement;
    if (p.cpu_moe || p.n_cpu_moe > 0) return "cpumoe";
    if (plan.n_gpu_layers == 0) return "ngl0";
    const bool all = plan.n_gpu_layers > m.n_layer + m.n_layer_mtp;
    if (!all) return "partial";
    return n_gpu > 1 ? "multi" : "full";
}

std::optional<measured_error> gpu_compute_error(const llamacpp_settings & s, const std::string & placement, bool host) {
    static const nlohmann::json table = [] {
        const std::string_view t = embedded("llamacpp_cuda_compute_error.json");
        return t.empty() ? nlohmann::json::object() : nlohmann::json::parse(t, nullptr, false);
    }();
    const std::string rel = release_tag(s);
    if (!table.is_object() || !table.contains("releases") || !table["releases"].contains(rel)) return std::nullopt;
    const auto & r = table["releases"][rel];
    const std::string key = placement + "|" + (host ? "host" : "gpu");
    if (!r.contains(key)) return std::nullopt;
    const auto & e = r[key];
    return measured_error{e.value("lo", 0.0), e.value("hi", 0.0), e.value("rows", 0u)};
}

std::optional<graph_replay_result> sched_compute_cpu(const model_desc & m, const llamacpp_settings & s,
                                                     const llamacpp_context & c, std::string * why) {
    // one plan asks twice (llamacpp_compute_unmodelled, then llamacpp_compute_bytes): the last answer is kept, keyed by
    // everything the graph reads (the model by its graph key, which hashes every dimension, and its tensor count; the
    // settings' cache rules; the context)
    struct memo {
        std::string graph_key;
        std::array<uint64_t, 20> key{};
        std::optional<graph_replay_result> r;
        std::string why;
    };
    thread_local memo last;
    const std::array<uint64_t, 20> key{m.n_layer, m.n_embd, m.n_vocab, m.weights.tensors.size(), m.n_layer_mtp,
                                       uint64_t(s.release), uint64_t(s.type_k), uint64_t(s.type_v), s.swa_full,
                                       s.kv_unified, s.op_offload, c.n_ctx, c.n_ctx_seq, c.n_seq, c.n_stream, c.n_batch,
                                       c.n_ubatch, c.flash_attn, c.n_rs_seq, c.n_outputs_max};
    const std::string graph_key = llamacpp_graph_key(m);
    if (last.graph_key == graph_key && last.key == key) {
        if (why && !last.r) *why = last.why;
        return last.r;
    }
    // the plan of a CPU build: one device, the host, holding every layer (placement.cpp with no GPU)
    llamacpp_plan plan;
    plan.settings = s;
    plan.ctx = c;
    plan.devices.resize(1);
    plan.devices[0].is_host = true;
    const size_t n_all = size_t(m.n_layer) + m.n_layer_mtp;
    plan.layer_device.assign(n_all, 0);
    plan.weight_device.assign(n_all, 0);
    plan.expert_device.assign(n_all, 0);
    std::string no;
    const auto r = sched_compute(m, plan, {}, &no);
    last.graph_key = graph_key, last.key = key, last.why = no;
    last.r = r ? std::optional<graph_replay_result>(graph_replay_result{r->bytes.at(0), r->variant}) : std::nullopt;
    if (why && !r) *why = no;
    return last.r;
}

} // namespace kvfit::detail
