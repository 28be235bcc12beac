// Host RAM of a llama-server plan (include/kvfit/llamacpp_extras.h): the host's buffers, the page cache of a mapped
// model, a projector or adapters kept on the host, the prompt cache and the context checkpoints, against --ram; the
// flags of the projector, adapters and host RAM; and their part of the runtime_plan (buffers, detail, warnings).
// Rules: docs/rules/llamacpp-host-ram.md (llama.cpp v0.5.0 = 5b4ebc5 tools/server/server-context.cpp,
// server-task.cpp, src/llama-memory-hybrid.cpp, llama-kv-cache-iswa.cpp, llama-model-loader.cpp; measured checkpoint
// sizes: tests/conformance/measured/spec-ckpt.*.jsonl).
#include "kvfit/llamacpp.h"

#include "kvfit/error.h"
#include "kvfit/units.h"

#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <sstream>
#include "core/util.h"

namespace kvfit {

using json = nlohmann::ordered_json;

namespace {


// Comma-separated items of a repeatable flag (common/arg.cpp parse_csv_row for --lora and --lora-scaled).
std::vector<std::string> csv_items(const std::vector<std::string> & values) {
    std::vector<std::string> out;
    for (const auto & v : values) {
        size_t start = 0;
        while (start <= v.size()) {
            const size_t end = std::min(v.find(',', start), v.size());
            if (end > start) out.push_back(v.substr(start, end - start));
            start = end + 1;
        }
    }
    return out;
}

uint64_t line_bytes(const host_ram_usage & h, std::string_view name) {
    for (const auto & l : h.lines) {
        if (l.name == name) return l.bytes;
    }
    return 0;
}

// What puts the host over --ram (host_ram_usage::cause). The lines held for as long as the server runs (weights,
// projector and adapters on the CPU; the host's KV, state, output and compute buffers) first: when they alone pass the
// capacity, each that is at least a quarter of them is named, the larger first, with the changes that shrink it (on a
// CPU-only plan no GPU can take layers); otherwise the prompt cache and checkpoints, counted at their limits, are.
std::string host_ram_cause(const host_ram_usage & h, bool mmap, bool gpus, uint32_t n_seq) {
    const uint64_t weights = line_bytes(h, "page_cache") + line_bytes(h, "weights") + line_bytes(h, "projector") +
                             line_bytes(h, "adapters");
    const uint64_t buffers = line_bytes(h, "buffers");
    const uint64_t held = weights + buffers;
    if (held <= h.capacity_bytes) { // the checkpoints at their limit (a model that keeps none has no such line)
        return fmt::format("with the context checkpoints at their limit: lower --ctx-checkpoints{}",
                           n_seq > 1 ? " or -np" : "");
    }
    const bool name_weights = weights * 4 >= held, name_buffers = buffers * 4 >= held;
    const std::string w = fmt::format("{} of weights{}", detail::gib_text(weights),
                                      mmap ? " (memory-mapped: page cache the OS may evict, so running over reads them "
                                             "from disk on every token rather than failing)"
                                           : " (--no-mmap: allocated)");
    const std::string b = fmt::format("{} of KV cache, state and compute buffers", detail::gib_text(buffers));
    std::vector<std::string> parts, fixes;
    if (gpus) fixes.push_back("more layers on a GPU (-ngl)");
    const bool weights_first = weights >= buffers;
    for (const bool is_weights : {weights_first, !weights_first}) {
        if (is_weights && name_weights) {
            parts.push_back(w);
            fixes.push_back("a smaller quant");
        } else if (!is_weights && name_buffers) {
            parts.push_back(b);
            fixes.push_back("a smaller -c, a quantized cache (-ctk/-ctv q8_0)");
        }
    }
    fixes.push_back("more RAM");
    std::string fix;
    for (size_t i = 0; i < fixes.size(); ++i) fix += (i == 0 ? "" : i + 1 == fixes.size() ? " or " : ", ") + fixes[i];
    return fmt::format("{} stay on the {}: {}", fmt::join(parts, " and "), gpus ? "CPU" : "host", fix);
}

bool is_extra_shown(const llamacpp_settings & s) {
    return s.host_ram_asked || s.ram_bytes > 0 || s.mmproj || !s.lora.empty() ||
           s.cache_ram_mib != llamacpp_default_cache_ram_mib || s.ctx_checkpoints != llamacpp_default_ctx_checkpoints;
}

} // namespace

// Declared in flags.cpp (called by parse_llamacpp_flags / llamacpp_flag_values).
void parse_extras_flags(const flag_values & f, llamacpp_settings & s) {
    if (!f.text("mmproj").empty()) s.mmproj = read_mmproj(f.text("mmproj"));
    s.mmproj_offload = !f.boolean("no_mmproj_offload");
    for (const auto & path : csv_items(f.list("lora"))) s.lora.push_back(read_lora(path));
    for (const auto & spec : csv_items(f.list("lora_scaled"))) s.lora.push_back(read_lora_scaled(spec));
    if (const std::string v = f.text("cache_ram"); !v.empty()) {
        // common/arg.cpp -cram N: an int, -1 = no limit, 0 = disabled
        int64_t n = 0;
        const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec != std::errc() || p != v.data() + v.size() || n < -1 || n > (int64_t(1) << 31)) {
            throw error(fmt::format("--cache-ram '{}': expected MiB (-1 no limit, 0 off)", v));
        }
        s.cache_ram_mib = n;
    }
    if (!f.text("ctx_checkpoints").empty()) {
        s.ctx_checkpoints = uint32_t(parse_flag_count("--ctx-checkpoints", f.text("ctx_checkpoints"), 0, 1u << 20));
    }
    if (const std::string v = f.text("ram"); !v.empty()) {
        s.ram_bytes = v == "auto" ? detect_host_ram_bytes() : parse_size_flag("--ram", v);
        // 0 B of host RAM is no machine: refused, never read as "not given" (ram_bytes 0)
        if (s.ram_bytes == 0 && v != "auto") throw error(fmt::format("--ram {}: the host's memory must be more than 0", v));
    }
    // a host flag given at llama-server's default (--ctx-checkpoints 32, --cache-ram 8192) still asks for the section
    s.host_ram_asked = !f.text("ram").empty() || !f.text("cache_ram").empty() || !f.text("ctx_checkpoints").empty();
}

void extras_flag_values(const llamacpp_settings & s, flag_values & f) {
    if (s.mmproj) f.set("mmproj", s.mmproj->path);
    if (!s.mmproj_offload) f.set("no_mmproj_offload", "true");
    for (const auto & a : s.lora) {
        if (a.scale == 1.0) f.add("lora", a.path);
        else f.add("lora_scaled", fmt::format("{}:{}", a.path, a.scale));
    }
    if (s.cache_ram_mib != llamacpp_default_cache_ram_mib) f.set("cache_ram", std::to_string(s.cache_ram_mib));
    // asked at the defaults only: one flag keeps the request (is_extra_shown)
    const bool asked_at_defaults = s.host_ram_asked && s.ram_bytes == 0 && s.cache_ram_mib == llamacpp_default_cache_ram_mib &&
                                   s.ctx_checkpoints == llamacpp_default_ctx_checkpoints;
    if (s.ctx_checkpoints != llamacpp_default_ctx_checkpoints || asked_at_defaults) {
        f.set("ctx_checkpoints", std::to_string(s.ctx_checkpoints));
    }
    if (s.ram_bytes) f.set("ram", fmt::format("{}B", s.ram_bytes));
}

uint64_t detect_host_ram_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit) {
        if (key == "MemTotal:") return kib * 1024;
    }
    return 0;
}

uint64_t llamacpp_checkpoint_bytes(const model_desc & m, const llamacpp_plan & p) {
    const llamacpp_settings & s = p.settings;
    uint32_t n_recr = 0, n_swa_layers = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        n_recr += m.is_recurrent(il);
        n_swa_layers += m.is_swa(il);
    }
    if (n_recr > 0) {
        // llama_memory_hybrid::state_write with the partial flag writes the recurrent part only
        // (llama-memory-hybrid.cpp:191-197): 8 (magic, seq) + 20 + 24 per recurrent layer + one sequence's state
        llamacpp_context one;
        one.n_seq = 1;
        return 28 + 24ull * n_recr + llamacpp_recurrent(m, one).bytes();
    }
    if (n_swa_layers > 0 && !s.swa_full) {
        // llama_kv_cache_iswa::state_write, partial: the SWA cache only (llama-kv-cache-iswa.cpp:260-266); cells the
        // window masks are skipped (llama-kv-cache.cpp:2082-2087), so at most n_swa cells: 8 + 4 + 4 + 12 c (+ 12 c
        // of llama_kv_cell_ext with M-RoPE, :2226-2229) + 8 + per layer 24 + c x cell bytes
        uint64_t c = 0;
        for (uint32_t il = 0; il < m.n_layer; ++il) {
            if (const layer_cache * lc = m.attention_cache(il); lc && m.is_swa(il)) c = std::max<uint64_t>(c, lc->window);
        }
        if (c == 0) c = m.n_swa ? m.n_swa : m.n_chunk;
        c = std::min<uint64_t>(c, p.ctx.n_ctx_seq);
        uint64_t bytes = 24 + 12 * c + (m.n_pos_per_embd > 1 ? 12 * c : 0);
        for (uint32_t il = 0; il < m.n_layer; ++il) {
            const layer_cache * lc = m.attention_cache(il);
            if (!lc || !m.is_swa(il)) continue;
            bytes += 24 + c * llamacpp_cell_bytes(m, il, *lc, s.type_k, s.type_v, s.mla, p.ctx.flash_attn, s.release);
        }
        return bytes;
    }
    return 0; // a plain llama_kv_cache can roll back: the server makes no checkpoints
}

host_ram_usage llamacpp_host_ram(const model_desc & m, const llamacpp_plan & p) {
    const llamacpp_settings & s = p.settings;
    host_ram_usage h;
    const device_usage & host = p.devices.back();
    const bool gpus = p.devices.size() > 1;
    const buffer_set & u = host.used;
    auto add = [&](std::string name, uint64_t bytes, bool bound, bool reclaimable, std::string what) {
        if (bytes == 0) return;
        h.lines.push_back({std::move(name), bytes, bound, reclaimable, std::move(what)});
        h.total_bytes += bytes;
        if (!bound && !reclaimable) h.allocated_bytes += bytes;
    };
    // 3.4: with a GPU the CPU backend's compute buffer and the output buffer are pinned (CUDA_Host,
    // llama-context.cpp:407-418, 2184); KV and state kept on the CPU are plain CPU buffers
    add("buffers", u.kv_bytes + u.state_bytes + u.output_bytes + u.compute_bytes, false, false,
        gpus ? "KV cache, state on the host; output and CPU compute buffers (pinned CUDA_Host)"
             : "KV cache, recurrent state, output and compute buffers (CPU)");
    if (gpus) h.pinned_bytes += u.output_bytes + u.compute_bytes;
    // 3.3: mmap keeps the CPU weights in the page cache (CPU_Mapped, llama-model.cpp:1776-1796); without it they are
    // allocated and read in, into the GPU's pinned host buffer type unless --no-host (llama-model.cpp:1076-1090)
    if (p.placement.mmap) {
        add("page_cache", u.weights_bytes, false, true, "CPU-resident weights, memory-mapped: the file in the page cache");
    } else {
        add("weights", u.weights_bytes, false, false,
            gpus && !p.placement.no_host ? "CPU-resident weights, read in (--no-mmap: pinned CUDA_Host)"
                                         : "CPU-resident weights, read in (--no-mmap)");
        if (gpus && !p.placement.no_host) h.pinned_bytes += u.weights_bytes;
    }
    add("projector", u.projector_bytes, false, false, "--mmproj weights and clip compute on the CPU");
    add("adapters", u.adapter_bytes, false, false, "LoRA tensors of CPU-resident base weights");
    // 3.1: server_prompt_cache(cache_ram_mib, n_ctx), std::vector host memory outside --fit (server-task.cpp:1711-1900)
    if (s.cache_ram_mib > 0) {
        add("prompt_cache", uint64_t(s.cache_ram_mib) << 20, true, false,
            fmt::format("llama-server prompt cache, up to --cache-ram {} MiB", s.cache_ram_mib));
    }
    h.unbounded = s.cache_ram_mib < 0;
    // 3.2: at most --ctx-checkpoints per slot, each a partial sequence state (server-context.cpp:2309-2372)
    const uint64_t ckpt = llamacpp_checkpoint_bytes(m, p);
    add("checkpoints", uint64_t(p.ctx.n_seq) * s.ctx_checkpoints * ckpt, true, false,
        fmt::format("{} slot{} x {} context checkpoints x {} B", p.ctx.n_seq, p.ctx.n_seq == 1 ? "" : "s",
                    s.ctx_checkpoints, with_commas(ckpt)));
    h.capacity_bytes = s.ram_bytes;
    h.known = s.ram_bytes > 0;
    // the prompt cache is a limit llama-server evicts within, not memory it needs: server_prompt_cache::update drops
    // its oldest entries to stay under --cache-ram and lowers the limit when an allocation fails
    // (tools/server/server-task.cpp:1750-1772, v0.5.0); only a warning says it may grow past --ram
    h.needed_bytes = h.total_bytes - line_bytes(h, "prompt_cache");
    h.fits = !h.known || (h.needed_bytes <= h.capacity_bytes && !h.unbounded);
    h.starts = !h.known || h.allocated_bytes <= h.capacity_bytes;
    h.over = h.known && h.needed_bytes > h.capacity_bytes;
    h.cache_over = h.known && !h.over && h.total_bytes > h.capacity_bytes;
    if (h.over) h.cause = host_ram_cause(h, p.placement.mmap, gpus, p.ctx.n_seq);
    return h;
}

void llamacpp_extras_report(const model_desc & m, const llamacpp_plan & p, runtime_plan & r) {
    const llamacpp_settings & s = p.settings;
    for (size_t i = 0; i < p.devices.size() && i < r.devices.size(); ++i) {
        const buffer_set & u = p.devices[i].used;
        if (u.projector_bytes) r.devices[i].buffers.push_back({"projector", u.projector_bytes, false, "--mmproj weights + clip compute"});
        if (u.adapter_bytes) r.devices[i].buffers.push_back({"adapters", u.adapter_bytes, false, "LoRA adapters"});
    }
    if (s.mmproj) {
        const mmproj_desc & mp = *s.mmproj;
        const bool fa = s.flash_attn != flash_attn_mode::off;
        const mmproj_compute c = llamacpp_mmproj_compute(mp, fa);
        const size_t d = s.mmproj_offload && p.devices.size() > 1 ? 0 : p.devices.size() - 1;
        for (auto & b : r.devices[d].buffers) {
            if (b.name == "projector") b.estimate = !c.modelled || mp.from_config;
        }
        if (!c.modelled) r.warnings.push_back("--mmproj: " + c.why + "; keep a margin");
        if (mp.from_config) {
            r.notes.push_back(fmt::format("--mmproj {}: projector weights from its vision_config, as the F16 mmproj "
                                          "convert_hf_to_gguf.py --mmproj writes ({}); pass the GGUF for its exact bytes",
                                          mp.path, detail::mib_text(mp.weights_bytes)));
        }
        r.detail["projector"] = {{"path", mp.path}, {"vision_projector", mp.vision_projector},
                                 {"audio_projector", mp.audio_projector}, {"weights_bytes", mp.weights_bytes},
                                 {"compute_bytes", c.bytes}, {"n_patches", c.n_patches}, {"flash_attn", fa},
                                 {"compute_modelled", c.modelled}, {"device", p.devices[d].name},
                                 {"offload", s.mmproj_offload}, {"from_config", mp.from_config}};
        if (mp.has_vision && mp.vision_projector.find("vl_merger") != std::string::npos) {
            // the warmup is 46 x 46 merged tokens; a larger image grows the buffer at encode time (clip.cpp:1667)
            r.notes.push_back(fmt::format("--mmproj: the clip compute buffer is sized for the {}-patch warmup image, as "
                                          "llama-server's fit reserves it; larger images (up to --image-max-tokens, default "
                                          "4096 merged tokens) grow it while encoding{}", c.n_patches,
                                          fa ? "" : " (without flash attention by H x P^2 x 4 B)"));
        }
    }
    if (!s.lora.empty()) {
        json a = json::array();
        for (const auto & l : s.lora) {
            a.push_back({{"path", l.path}, {"scale", l.scale}, {"bytes", l.bytes()}, {"n_tensors", l.n_tensors},
                         {"from_safetensors", l.from_safetensors}});
            if (l.from_safetensors) {
                r.notes.push_back(fmt::format("--lora {}: llama.cpp loads a GGUF; sized as convert_lora_to_gguf.py writes it by "
                                              "default (f32: --outtype f16 halves it)", l.path));
            }
        }
        r.detail["adapters"] = a;
        r.notes.push_back("LoRA adapters are loaded after llama.cpp's --fit (not in its memory breakdown): kvfit counts them");
    }
    if (!is_extra_shown(s)) return;
    const host_ram_usage h = llamacpp_host_ram(m, p);
    json lines = json::array();
    for (const auto & l : h.lines) {
        lines.push_back({{"name", l.name}, {"bytes", l.bytes}, {"bound", l.bound}, {"reclaimable", l.reclaimable}, {"what", l.what}});
    }
    r.host_ram = host_ram_verdict{h.needed_bytes, h.capacity_bytes, h.known, h.over}; // --check, the text's verdict
    r.detail["host_ram"] = {{"capacity_bytes", h.capacity_bytes}, {"known", h.known}, {"fits", h.fits},
                            {"starts", h.starts}, {"over", h.over}, {"cause", h.cause}, {"allocated_bytes", h.allocated_bytes},
                            {"needed_bytes", h.needed_bytes}, {"total_bytes", h.total_bytes}, {"pinned_bytes", h.pinned_bytes},
                            {"prompt_cache_unbounded", h.unbounded}, {"cache_ram_mib", s.cache_ram_mib},
                            {"ctx_checkpoints", s.ctx_checkpoints}, {"checkpoint_bytes", llamacpp_checkpoint_bytes(m, p)},
                            {"lines", lines}};
    if (h.unbounded) {
        r.warnings.push_back("--cache-ram -1: llama-server's prompt cache has no limit in host RAM; the host verdict is "
                             "uncertain");
    }
    if (h.cache_over) {
        const uint64_t room = (h.capacity_bytes - h.needed_bytes) >> 20;
        r.warnings.push_back(fmt::format("host RAM: llama-server's prompt cache may grow to {} (--cache-ram {}{}), {} with "
                                         "it, {} given (--ram); it evicts its oldest prompts to stay within the limit "
                                         "(tools/server/server-task.cpp:1750), so the plan fits, but the OS may swap "
                                         "first: --cache-ram {} keeps it within the RAM (0 turns it off)",
                                         detail::gib_text(line_bytes(h, "prompt_cache")), s.cache_ram_mib,
                                         s.cache_ram_mib == llamacpp_default_cache_ram_mib ? ", the default" : "",
                                         detail::gib_text(h.total_bytes), detail::gib_text(h.capacity_bytes), room));
    }
    if (h.over) {
        // host RAM needed exceeds --ram (or the detected RAM): the plan does not fit (exit 3), whatever the GPUs say
        r.fits = false;
        r.warnings.push_back(fmt::format("host RAM: {} needed but {} given (--ram){}: {}", detail::gib_text(h.needed_bytes),
                                         detail::gib_text(h.capacity_bytes),
                                         h.starts ? "" : fmt::format(", {} of it allocated when llama-server starts",
                                                                     detail::gib_text(h.allocated_bytes)),
                                         h.cause));
    }
}

} // namespace kvfit
