// LoRA adapters (--lora, --lora-scaled; include/kvfit/llamacpp_extras.h): their bytes from the adapter's header and
// the device of each pair (the buffer type of its base weight), and where a projector goes.
// Rules: docs/rules/llamacpp-host-ram.md section 5 (llama.cpp v0.5.0 = 5b4ebc5 src/llama-adapter.cpp:160-420,
// measured: tests/conformance/measured/spec-lora.*.jsonl), docs/rules/llamacpp-mmproj.md (placement).
#include "kvfit/llamacpp.h"

#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "kvfit/safetensors.h"

#include <charconv>
#include <fmt/format.h>

namespace kvfit {
namespace {

// ggml-alloc pads every tensor of a buffer to the buffer type's alignment: 32 B on the CPU (TENSOR_ALIGNMENT);
// CUDA's 128 B changes nothing for rows of whole f16 / q8_0 blocks of the shapes adapters have.
constexpr uint64_t k_align = 32;
uint64_t padded(uint64_t b) { return (b + k_align - 1) / k_align * k_align; }

// The block index of "blk.<il>." (GGUF) or ".layers.<il>." (PEFT), or -1.
int64_t block_of(std::string_view name, std::string_view marker) {
    const size_t at = name.find(marker);
    if (at == std::string_view::npos) return -1;
    const std::string_view rest = name.substr(at + marker.size());
    uint64_t il = 0;
    const auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), il);
    if (ec != std::errc() || p == rest.data() || p == rest.data() + rest.size() || *p != '.' || il > 1000000) return -1;
    return int64_t(il);
}

void add_to(lora_adapter & a, std::string_view name, int64_t il, uint64_t bytes) {
    ++a.n_tensors;
    if (il >= 0) {
        const size_t i = size_t(il);
        if (a.layer_bytes.size() <= i) a.layer_bytes.resize(i + 1), a.expert_bytes.resize(i + 1);
        (name.find("_exps") != std::string_view::npos ? a.expert_bytes : a.layer_bytes)[i] += bytes;
    } else if (name.starts_with("token_embd") || name.find("embed_tokens") != std::string_view::npos) {
        a.input_bytes += bytes; // the input layer's weight lives on the CPU
    } else {
        a.output_bytes += bytes;
    }
}


lora_adapter lora_from_safetensors(const safetensors_file & f, const std::string & path, double scale) {
    lora_adapter a;
    a.path = path;
    a.scale = scale;
    a.from_safetensors = true;
    for (const auto & t : f.tensors()) {
        const std::string_view n = t.name;
        if (n.find(".lora_A.") == std::string_view::npos && n.find(".lora_B.") == std::string_view::npos) continue;
        // convert_lora_to_gguf.py writes f32 by default (--outtype f32, :286-289): 4 B per value once converted
        add_to(a, n, block_of(n, ".layers."), padded(t.n_elements * 4));
    }
    if (a.n_tensors == 0) throw error(fmt::format("--lora {}: no lora_A / lora_B tensors in the safetensors header", path));
    return a;
}

} // namespace

uint64_t lora_adapter::bytes() const {
    uint64_t b = input_bytes + output_bytes;
    for (uint64_t x : layer_bytes) b += x;
    for (uint64_t x : expert_bytes) b += x;
    return b;
}

lora_adapter lora_from_gguf(const gguf_file & f, const std::string & path, double scale) {
    // llama_adapter_lora_init_impl: general.type must be "adapter" and adapter.type "lora" (llama-adapter.cpp:170-190)
    if (f.string_of("general.type") != "adapter" || f.string_of("adapter.type") != "lora") {
        throw error(fmt::format("--lora {}: not a LoRA adapter (general.type '{}', adapter.type '{}'; expected adapter, lora)",
                                path, f.string_of("general.type"), f.string_of("adapter.type")));
    }
    lora_adapter a;
    a.path = path;
    a.scale = scale;
    a.architecture = f.string_of("general.architecture");
    for (const auto & t : f.tensors()) {
        const std::string_view n = t.name;
        // pairs <weight>.lora_a [n_in, r] / <weight>.lora_b [r, n_out]; other tensors (norms) are ignored (:230-260)
        if (!n.ends_with(".lora_a") && !n.ends_with(".lora_b")) continue;
        add_to(a, n, block_of(n, "blk."), padded(t.bytes));
    }
    if (a.n_tensors == 0) throw error(fmt::format("--lora {}: no .lora_a / .lora_b tensors", path));
    return a;
}

lora_adapter read_lora(const std::string & path, double scale) {
    const bool st = path.ends_with(".safetensors");
    try {
        if (st) return lora_from_safetensors(safetensors_file::open(path), path, scale);
        return lora_from_gguf(gguf_file::open(path), path, scale);
    } catch (const error & e) {
        const std::string what = e.what();
        if (what.starts_with("--lora")) throw;
        throw error(fmt::format("--lora {}", what));
    }
}

lora_adapter read_lora_scaled(std::string_view spec) {
    // common/arg.cpp --lora-scaled: "FNAME:SCALE" (the last ':'), several separated by ','
    const size_t colon = spec.rfind(':');
    double scale = 0;
    if (colon == std::string_view::npos || colon == 0) {
        throw error(fmt::format("--lora-scaled '{}': expected FILE:SCALE", spec));
    }
    const std::string_view sv = spec.substr(colon + 1);
    const auto [p, ec] = std::from_chars(sv.data(), sv.data() + sv.size(), scale);
    if (sv.empty() || ec != std::errc() || p != sv.data() + sv.size()) {
        throw error(fmt::format("--lora-scaled '{}': expected FILE:SCALE", spec));
    }
    return read_lora(std::string(spec.substr(0, colon)), scale);
}

void llamacpp_place_extras(const model_desc & m, llamacpp_plan & p) {
    const llamacpp_settings & s = p.settings;
    if (p.devices.empty()) return;
    const size_t host = p.devices.size() - 1;
    size_t out_dev = host;
    for (size_t i = 0; i < p.devices.size(); ++i) {
        if (p.devices[i].has_output) out_dev = i;
    }
    // clip_init with the server's mmproj_use_gpu: the first GPU backend, or the CPU with --no-mmproj-offload
    // (server-context.cpp:1063-1089, clip.cpp); weights + the warmup's compute buffer on that device
    if (s.mmproj) {
        const mmproj_compute c = llamacpp_mmproj_compute(*s.mmproj, s.flash_attn != flash_attn_mode::off);
        const size_t d = s.mmproj_offload && host > 0 ? 0 : host;
        p.devices[d].used.projector_bytes += s.mmproj->weights_bytes + c.bytes;
    }
    // each lora_a / lora_b in the buffer type of its base weight (llama-adapter.cpp:330-357): the block's device
    for (const auto & a : s.lora) {
        if (!a.architecture.empty() && !m.gguf_architecture.empty() && a.architecture != m.gguf_architecture) {
            throw error(fmt::format("--lora {}: model arch and LoRA arch mismatch ({} vs {}), llama.cpp refuses it", a.path,
                                    m.gguf_architecture, a.architecture));
        }
        for (size_t il = 0; il < a.layer_bytes.size(); ++il) {
            const bool placed = il < p.weight_device.size();
            p.devices[placed ? p.weight_device[il] : out_dev].used.adapter_bytes += a.layer_bytes[il];
            p.devices[placed ? p.expert_device[il] : out_dev].used.adapter_bytes += a.expert_bytes[il];
        }
        p.devices[host].used.adapter_bytes += a.input_bytes;
        p.devices[out_dev].used.adapter_bytes += a.output_bytes;
    }
}

} // namespace kvfit
