// The backend as an input (--backend, inferred from the GPUs) and the compute terms a GPU backend adds to the CPU
// graph that compute.cpp reproduces byte for byte (include/kvfit/llamacpp.h: llamacpp_apply_backend_terms).
// Rules C1-C5: docs/rules/llamacpp-cuda.md, read from ggml's sources of llama.cpp v0.5.0 (ggml/src/ggml-cuda/,
// ggml/src/ggml-backend.cpp; the same code is in 5b4ebc5) and the public logs of ../shared/cases (K6, K7, K10).
// No CUDA runtime runs in kvfit's tests (the suite's llama.cpp builds are CPU builds): every figure here is an
// estimate from source and logs, and the plan says so beside the buffer it enlarges.
//
// Each term is named after the ggml tensor it stands for:
//   flash_attn_ext_f16_kv  (C2, K7)  the f16 copies of a quantized K/V that CUDA's flash-attention kernel reads
//   pp_input_copies        (C3)      the 4 copies of every graph input under pipeline parallelism (several GPUs)
//   op_offload_staging     (C4, K10) the CPU-resident expert weights an offloaded MUL_MAT_ID copies into CUDA0
//   quantized_row_padding  (C5)      MATRIX_ROW_PADDING of quantized weights in a CUDA buffer
#include "kvfit/llamacpp.h"

#include "kvfit/error.h"
#include "runtimes/llamacpp/compute.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include "core/util.h"

namespace kvfit {

const char * gpu_backend_name(gpu_backend b) {
    switch (b) {
    case gpu_backend::cuda:   return "cuda";
    case gpu_backend::rocm:   return "rocm";
    case gpu_backend::vulkan: return "vulkan";
    case gpu_backend::metal:  return "metal";
    case gpu_backend::cpu:    break;
    }
    return "cpu";
}

gpu_backend parse_gpu_backend(std::string_view text) {
    std::string v(text);
    for (auto & ch : v) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    if (v == "cuda") return gpu_backend::cuda;
    if (v == "rocm" || v == "hip") return gpu_backend::rocm;
    if (v == "vulkan") return gpu_backend::vulkan;
    if (v == "metal") return gpu_backend::metal;
    if (v == "cpu") return gpu_backend::cpu;
    throw error(fmt::format("--backend '{}': expected cuda, rocm, vulkan, metal or cpu", text));
}

namespace {

struct named_backend {
    gpu_backend backend = gpu_backend::cpu; ///< the vendor's own backend (cuda, rocm, metal), or a ggml device's
    std::string vendor;                     ///< "NVIDIA", "AMD", "Apple"; "" for a ggml device name
};

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto & ch : out) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    return out;
}

// "CUDA0", "ROCm1", "Vulkan0", "Metal", "MTL0": the device names ggml's backends log (ggml_backend_dev_name).
std::optional<gpu_backend> ggml_device_prefix(const std::string & low) {
    auto digits_after = [&](std::string_view prefix) {
        if (low.rfind(prefix, 0) != 0) return false;
        return std::all_of(low.begin() + long(prefix.size()), low.end(), [](char ch) { return std::isdigit(uint8_t(ch)); });
    };
    if (digits_after("cuda")) return gpu_backend::cuda;
    if (digits_after("rocm")) return gpu_backend::rocm;
    if (digits_after("vulkan")) return gpu_backend::vulkan;
    if (digits_after("metal") || digits_after("mtl")) return gpu_backend::metal;
    return std::nullopt;
}

gpu_backend backend_of_vendor(const std::string & vendor) {
    if (vendor == "NVIDIA") return gpu_backend::cuda;
    if (vendor == "AMD") return gpu_backend::rocm;
    if (vendor == "Apple") return gpu_backend::metal;
    return gpu_backend::cpu;
}

// The backend a GPU implies: its vendor (the GPU table's or the detection tool's, device_spec::vendor; a CUDA compute
// capability means NVIDIA), a driver name's vendor words, or a ggml device name.
std::optional<named_backend> backend_of_gpu(const device_spec & gpu) {
    const std::string vendor = !gpu.vendor.empty() ? gpu.vendor : gpu.compute_capability > 0 ? "NVIDIA" : "";
    if (const gpu_backend b = backend_of_vendor(vendor); b != gpu_backend::cpu) return named_backend{b, vendor};
    const std::string low = lower(gpu.name);
    if (const auto b = ggml_device_prefix(low)) return named_backend{*b, ""};
    auto has = [&](std::string_view word) { return low.find(word) != std::string::npos; };
    if (has("nvidia") || has("geforce") || has("tesla") || has("quadro")) return named_backend{gpu_backend::cuda, "NVIDIA"};
    if (has("amd") || has("radeon") || has("instinct")) return named_backend{gpu_backend::rocm, "AMD"};
    if (has("apple")) return named_backend{gpu_backend::metal, "Apple"};
    return std::nullopt;
}

} // namespace

backend_choice llamacpp_backend_of(const std::vector<device_spec> & gpus, std::optional<gpu_backend> given) {
    if (gpus.empty()) {
        if (given && *given != gpu_backend::cpu) {
            throw error(fmt::format("--backend {} needs a GPU (--gpu)", gpu_backend_name(*given)));
        }
        return {gpu_backend::cpu, given ? "--backend" : "no GPU", false};
    }
    if (given && *given == gpu_backend::cpu) throw error("--backend cpu: a CPU build offloads nothing; drop --gpu");
    std::optional<named_backend> named;
    std::string named_gpu;
    for (const auto & g : gpus) {
        const auto b = backend_of_gpu(g);
        if (!b) continue;
        if (named && named->backend != b->backend && !given) {
            throw error(fmt::format("--gpu: {} and {} need different backends ({} and {}): pass --backend", named_gpu,
                                    g.name, gpu_backend_name(named->backend), gpu_backend_name(b->backend)));
        }
        if (given && *given != b->backend && *given != gpu_backend::vulkan) {
            // Vulkan runs on every vendor's GPU; CUDA only on NVIDIA, HIP on AMD, Metal on Apple
            throw error(fmt::format("--backend {}: {} is {} GPU ({} or vulkan)", gpu_backend_name(*given), g.name,
                                    b->vendor.empty() ? "a " + std::string(gpu_backend_name(b->backend)) : "an " + b->vendor,
                                    gpu_backend_name(b->backend)));
        }
        if (!named) named_gpu = g.name;
        named = b;
    }
    if (given) return {*given, "--backend", false};
    if (named) {
        const std::string why = named->vendor.empty()
                                    ? fmt::format("{} is a {} device", named_gpu, gpu_backend_name(named->backend))
                                    : fmt::format("{} is an {} GPU", named_gpu, named->vendor);
        return {named->backend, why, false};
    }
    return {gpu_backend::cuda, "assumed: --gpu gave sizes only (pass --backend to choose)", true};
}

namespace {

uint64_t pad128(uint64_t x) { return (x + 127) / 128 * 128; }

// The FLASH_ATTN_EXT node of layer il as ggml-cuda allocates it (C2): {nbytes(kqv), the f16 K/V scratch after it}.
// kqv [head_dim_v, n_head, T] f32 (ggml_flash_attn_ext); K/V are views of the cache, n_kv cells per stream at
// reserve (init_full). fattn-common.cuh:53-85: end = nbytes(kqv); K: end = pad128(end) + nelements(K) x 2;
// V (unless a view of K): end = pad128(end) + nelements(V) x 2.
struct fa_node {
    uint64_t kqv = 0;     ///< nbytes of the FA output
    uint64_t scratch = 0; ///< bytes after it: the f16 K and V copies with their 128-B alignment
};

fa_node fa_node_of(const model_desc & m, const llamacpp_settings & s, const detail::compute_graph & g, uint32_t il) {
    fa_node n;
    const layer_cache * a = m.attention_cache(il);
    if (!g.fa || a == nullptr) return n;
    const bool latent = a->kind == cache_kind::latent;
    // MLA: V is the first kv_lora_rank values of the latent K (a view of K: V_is_K_view) unless the older layout
    // kept a V of its own (mla_layout::k_and_v)
    const uint64_t dv = latent ? m.kv_lora_rank : a->head_dim_v;
    n.kqv = dv * m.n_head[il] * g.n_tokens * 4;
    // ggml_cuda_get_best_fattn_kernel (fattn.cu:541-700): with a quantized K or V the VEC kernel only for
    // Q->ne[1] <= 2 tokens per stream; the reserve graph's n_ubatch tokens take MMA_F16 (TILE before Turing), both of
    // which need f16 K and V (fattn.cu:735-748)
    if (g.n_tokens / std::max<uint32_t>(1, g.n_stream) <= 2) return n;
    const uint64_t cells = (m.is_swa(il) ? g.n_kv_swa : g.n_kv) * g.n_stream;
    uint64_t end = n.kqv;
    if (s.type_k != ggml_type::f16) end = pad128(end) + cells * a->width_k() * 2;
    const uint64_t v_width = latent ? (s.mla == mla_layout::k_and_v ? uint64_t(m.kv_lora_rank) : 0) : a->width_v();
    if (s.type_v != ggml_type::f16 && v_width > 0) end = pad128(end) + cells * v_width * 2;
    n.scratch = end - n.kqv;
    return n;
}


} // namespace

namespace {

/// C5 and the KV rows' padding: the CUDA buffer layout of the weights and caches on each GPU (below).
void apply_layout_terms(llamacpp_plan & plan, const model_desc & m, const std::vector<device_spec> & gpus) {
    const llamacpp_settings & s = plan.settings;
    const placement_settings & p = plan.placement;
    const bool cuda = plan.backend.backend == gpu_backend::cuda;
    const size_t n_gpu = gpus.size();
    const uint32_t host = uint32_t(plan.devices.size() - 1);
    // C5: the CUDA buffer layout (ggml-cuda.cu:902-925): every tensor in a CUDA buffer is aligned to 128 B
    // (get_alignment) and a quantized tensor whose row is not a multiple of MATRIX_ROW_PADDING = 512 takes
    // row_size(type, 512 - ne0 % 512) more (get_alloc_size, common.cuh:186); the buffer is the sum of
    // pad128(alloc_size) over its tensors (ggml-alloc.c ggml_backend_alloc_ctx_tensors_from_buft). The weight groups
    // count each tensor padded to the file's alignment (32 B at least), the KV caches their rows unpadded; the term is
    // the difference, per GPU. Checked exactly against the release's ggml-cuda on a simulated device
    // (tests/conformance/cuda_conformance.mjs: the weights and KV columns).
    if (cuda || plan.backend.backend == gpu_backend::rocm) {
        std::vector<uint64_t> wpad(n_gpu, 0), kvpad(n_gpu, 0);
        const auto alloc_size = [](ggml_type t, uint64_t ne0, uint64_t bytes) {
            return bytes + (ggml_is_quantized(t) && ne0 % 512 != 0 ? ggml_row_size(t, 512 - ne0 % 512) : 0);
        };
        if (!m.weights.tensors.empty()) {
            uint32_t out_dev = host;
            for (size_t d = 0; d < n_gpu; ++d) out_dev = plan.devices[d].has_output ? uint32_t(d) : out_dev;
            for (const auto & t : m.weights.tensors) {
                if (t.duplicate) continue;
                // a tied head offloaded is token_embd again, in the output's GPU buffer (placement.cpp)
                if (m.tied_embeddings && t.name == "token_embd.weight" && out_dev < n_gpu) {
                    wpad[out_dev] += pad128(alloc_size(t.type, t.ne[0], t.bytes)) - (t.bytes + 31) / 32 * 32;
                }
                uint32_t d = host;
                if (t.layer == weight_tensor::output) d = out_dev;
                else if (t.layer >= 0 && uint32_t(t.layer) < m.n_layer && uint32_t(t.layer) < plan.weight_device.size()) {
                    const bool expert = t.name.find("_exps") != std::string::npos;
                    d = (expert ? plan.expert_device : plan.weight_device)[size_t(t.layer)];
                }
                if (d >= n_gpu) continue;
                const uint64_t counted = (t.bytes + 31) / 32 * 32;
                wpad[d] += pad128(alloc_size(t.type, t.ne[0], t.bytes)) - counted;
            }
        }
        // the K and V tensors of every cache of each layer (one tensor each per layer: llama_kv_cache), at the widths
        // llama.cpp allocates (llamacpp_cache_row_widths: attention K/V, the MLA latent, indexer keys, compressed
        // caches in type_k; the V an MSA or hybrid indexer keeps, found 57 x 512 B and 12 x 384 B short of the
        // simulated CUDA rows of MiniMax-M3 and Qwen3.8-Flash-Next at q8_0 when only K was padded)
        if (!p.no_kv_offload) {
            const auto pad = [](ggml_type t, uint64_t width) {
                if (width == 0 || !ggml_is_quantized(t) || width % 512 == 0) return uint64_t(0);
                return pad128(ggml_row_size(t, 512 - width % 512));
            };
            const std::vector<std::vector<cache_row_widths>> widths = llamacpp_cache_row_widths(m, s);
            for (uint32_t il = 0; il < m.n_layer && il < plan.layer_device.size(); ++il) {
                const uint32_t d = plan.layer_device[il];
                if (d >= n_gpu) continue;
                for (const cache_row_widths & w : widths[il]) kvpad[d] += pad(s.type_k, w.k) + pad(s.type_v, w.v);
            }
        }
        for (size_t d = 0; d < n_gpu; ++d) {
            if (wpad[d] > 0) {
                plan.backend_terms.push_back({"quantized_row_padding", uint32_t(d), "weights", wpad[d], wpad[d], true,
                                              "CUDA buffer layout of the weights: 128-B alignment and MATRIX_ROW_PADDING "
                                              "(512) of quantized rows, ggml-cuda.cu:902-925"});
                plan.devices[d].used.weights_bytes += wpad[d];
            }
            if (kvpad[d] > 0) {
                plan.backend_terms.push_back({"kv_row_padding", uint32_t(d), "kv", kvpad[d], kvpad[d], true,
                                              "MATRIX_ROW_PADDING (512) of quantized K/V rows in a CUDA buffer, "
                                              "ggml-cuda.cu:908-925"});
                plan.devices[d].used.kv_bytes += kvpad[d];
            }
        }
    }
}

} // namespace

uint64_t llamacpp_cuda_fa_f16_bytes(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c,
                                    uint32_t il) {
    return fa_node_of(m, s, detail::compute_graph_of(m, s, c), il).scratch;
}

void llamacpp_apply_backend_terms(llamacpp_plan & plan, const model_desc & m, const std::vector<device_spec> & gpus) {
    const llamacpp_settings & s = plan.settings;
    const placement_settings & p = plan.placement;
    plan.backend = llamacpp_backend_of(gpus, s.backend);
    plan.backend_terms.clear();
    if (gpus.empty()) return; // the CPU build: placement.cpp placed the CPU graph
    if (plan.backend.backend == gpu_backend::cpu) return llamacpp_place_graph_compute(plan, m);
    const bool cuda = plan.backend.backend == gpu_backend::cuda;
    const detail::compute_graph g = detail::compute_graph_of(m, s, plan.ctx);
    const size_t n_gpu = gpus.size();
    const uint32_t host = uint32_t(plan.devices.size() - 1);
    plan.gpu_compute = {};
    // the recorded reserve graph through the scheduler replay, when a format-2 template covers the plan: every
    // device's compute buffer exactly, no estimated term (C0-C4) needed
    if (auto sc = detail::sched_compute(m, plan, gpus, &plan.gpu_compute.why)) {
        plan.gpu_compute.replayed = true;
        plan.gpu_compute.why.clear();
        plan.gpu_compute.variant = sc->variant;
        plan.gpu_compute.prompt_bytes = sc->prompt;
        plan.gpu_compute.n_splits = sc->n_splits;
        plan.gpu_compute.n_copies = sc->n_copies;
        plan.gpu_compute.assumed = sc->assumed;
        for (size_t d = 0; d < plan.devices.size() && d < sc->bytes.size(); ++d) plan.devices[d].used.compute_bytes = sc->bytes[d];
        apply_layout_terms(plan, m, gpus);
        return;
    }
    // per GPU: the compute buffer as the CPU graph gives it, then raised by the stages that hold C2 / C4
    llamacpp_place_graph_compute(plan, m);
    std::vector<uint64_t> peak(n_gpu);
    for (size_t d = 0; d < n_gpu; ++d) peak[d] = plan.devices[d].used.compute_bytes;

    // C0: every layer, the output and the KV cache on one GPU (detail::full_offload_compute, the scheduler's split:
    // the graph inputs and the embedding rows on the host backend, copies of them on the GPU). HIP builds the same
    // ggml-cuda code (graph_optimize included); Vulkan's split is the same scheduler's, without CUDA's fusions. Metal's
    // buffers are host memory (unified): not modelled here, the CPU graph's figure stays.
    const uint32_t n_all = m.n_layer + m.n_layer_mtp;
    const bool split_modelled = cuda || plan.backend.backend == gpu_backend::rocm || plan.backend.backend == gpu_backend::vulkan;
    const bool one_gpu_all = split_modelled && n_gpu == 1 && plan.n_gpu_layers >= n_all + 1 && !p.no_kv_offload &&
                             p.override_tensor_cpu.empty() && !p.cpu_moe && p.n_cpu_moe == 0;
    if (one_gpu_all) {
        const detail::device_compute dc = detail::full_offload_compute(m, s, plan.ctx, cuda || plan.backend.backend == gpu_backend::rocm);
        peak[0] = dc.gpu;
        plan.devices[host].used.compute_bytes = dc.host;
        plan.gpu_compute.full_offload_rule = true;
    }

    // C2 (K7): the attention stage of the largest FA node on each GPU. Live at the node (the largest layer's):
    // the inputs I (the KQ mask among them), the residual and attn_norm (2E), the roped Q (Q; with an output gate,
    // Qcur_full = Q + gate projected together stays live too: 3Q), and the node itself, kqv + the f16 scratch.
    if (!p.no_kv_offload) {
        // an output gate projected with Q (the config's attn_gate, or the architecture's: arch_facts attn_gate)
        const bool gated = m.parts.attn_gate || m.arch.attn_gate;
        std::vector<fa_node> largest(n_gpu);
        for (uint32_t il = 0; il < m.n_layer && il < plan.layer_device.size(); ++il) {
            const uint32_t d = plan.layer_device[il];
            if (d >= n_gpu) continue;
            const fa_node n = fa_node_of(m, s, g, il);
            if (n.scratch > largest[d].scratch) largest[d] = n;
        }
        for (size_t d = 0; d < n_gpu; ++d) {
            if (largest[d].scratch == 0) continue;
            const uint64_t q_live = (gated ? 3 : 1) * g.Q;
            const uint64_t stage = g.inputs + 2 * g.E + q_live + pad128(largest[d].kqv) + largest[d].scratch;
            const uint64_t raised = std::max(peak[d], stage);
            backend_term t{"flash_attn_ext_f16_kv", uint32_t(d), "compute", largest[d].scratch, raised - peak[d], cuda,
                           fmt::format("f16 copies of the {} K / {} V cache for flash_attn_ext ({} cells x {} stream{}), "
                                       "fattn.cu:719-756", ggml_traits(s.type_k).name, ggml_traits(s.type_v).name,
                                       g.n_kv, g.n_stream, g.n_stream == 1 ? "" : "s")};
            if (cuda) peak[d] = raised;
            plan.backend_terms.push_back(std::move(t));
        }
    }

    // C4 (K10): op offload. CUDA0 (the first backend that wants the op, ggml-backend.cpp:951-981) runs the MUL_MAT_ID
    // of CPU-resident experts once the reserve graph's batch reaches op_offload_min_batch_size (32,
    // GGML_OP_OFFLOAD_MIN_BATCH; ggml-cuda.cu:5599-5618, :5788), copying the weights into its compute buffer as split
    // inputs (:1399-1411). Counted: one block's host-resident expert tensors together (up, gate, down; an upper
    // bound: best fit may put a later tensor no larger than the freed one into its block), on top of the MoE block's
    // stage (inputs, residuals, the experts' activations).
    if (s.op_offload && g.n_tokens >= 32) {
        uint64_t staged = 0;
        uint32_t staged_il = 0;
        for (uint32_t il = 0; il < m.n_layer && il < plan.expert_device.size(); ++il) {
            if (plan.expert_device[il] != host) continue;
            const uint64_t b = m.weights.layers.at(il).expert_bytes;
            if (b > staged) staged = b, staged_il = il;
        }
        if (staged > 0) {
            // the MoE block's own stage (latent experts: latent_moe_stage, compute_hybrid.cpp) with the weights on it
            const uint64_t moe = m.moe_latent > 0 ? detail::latent_moe_stage(m, g) : g.inputs + 2 * g.E + detail::ffn_block(m, g);
            const uint64_t stage = moe + staged;
            const uint64_t raised = std::max(peak[0], stage);
            backend_term t{"op_offload_staging", 0, "compute", staged, raised - peak[0], cuda,
                           fmt::format("blk.{}'s CPU-resident expert tensors (ffn_*_exps) copied for the offloaded "
                                       "MUL_MAT_ID at n_ubatch {} >= 32 (--no-op-offload or -ub 16 avoids it), "
                                       "ggml-backend.cpp:951-981, ggml-cuda.cu:5599-5618",
                                       staged_il, g.n_tokens)};
            if (cuda) peak[0] = raised;
            plan.backend_terms.push_back(std::move(t));
        }
    }
    for (size_t d = 0; d < n_gpu; ++d) plan.devices[d].used.compute_bytes = peak[d];

    // C3: pipeline parallelism (llama-context.cpp:429-456): several GPUs, every layer and the output offloaded,
    // split mode layer, KV offloaded, no tensor overrides (-ot, --cpu-moe, --n-cpu-moe), async + events on every GPU
    // backend (CUDA/HIP, Vulkan and Metal all have them). The scheduler then keeps GGML_SCHED_MAX_COPIES = 4 copies
    // of every graph input a GPU's splits read, all flagged input+output so ggml-alloc never reuses them
    // (ggml-backend.cpp:1375-1411): 3 more than the one the CPU graph counts, on every GPU.
    const uint32_t n_layer_all = m.n_layer + m.n_layer_mtp;
    const bool all_offloaded = plan.n_gpu_layers >= n_layer_all + 1;
    const bool overrides = !p.override_tensor_cpu.empty() || p.cpu_moe || p.n_cpu_moe > 0;
    if (n_gpu > 1 && all_offloaded && !p.no_kv_offload && !overrides) {
        const uint64_t pos = g.inputs - g.tok - g.Ein - g.out_ids - g.s_copy - g.inputs_kv - g.inputs_swa;
        for (size_t d = 0; d < n_gpu; ++d) {
            const device_usage & dev = plan.devices[d];
            if (dev.n_layers == 0 && !dev.has_output) continue;
            bool full = false, swa = false, rec = false;
            for (uint32_t il = 0; il < m.n_layer && il < plan.layer_device.size(); ++il) {
                if (plan.layer_device[il] != d) continue;
                if (m.has_kv(il)) (m.is_swa(il) ? swa : full) = true;
                rec |= m.kind_of(il) == layer_kind::recurrent;
            }
            // the inputs its splits read, and the activation entering its first split (the embedding rows from the
            // CPU on GPU0, the previous GPU's l_out on the others: [n_embd, T] f32)
            const uint64_t read = (full ? g.inputs_kv : 0) + (swa ? g.inputs_swa : 0) + (full || swa ? pos : 0) +
                                  (rec ? g.s_copy : 0) + (dev.has_output ? g.out_ids : 0) + g.E;
            backend_term t{"pp_input_copies", uint32_t(d), "compute", 4 * read, 3 * read, true,
                           fmt::format("4 copies (GGML_SCHED_MAX_COPIES) of the graph inputs read here (KQ mask{}, "
                                       "indices, positions) and of the [n_embd, n_ubatch] activation entering the "
                                       "GPU, {} each; pipeline parallelism, ggml-backend.cpp:1375-1411",
                                       swa ? "s" : "", detail::mib_text(read))};
            plan.devices[d].used.compute_bytes += t.added_bytes;
            plan.backend_terms.push_back(std::move(t));
        }
    }

    apply_layout_terms(plan, m, gpus);
}

} // namespace kvfit
