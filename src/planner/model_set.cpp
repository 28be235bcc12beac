// A set of models on one machine (include/kvfit/model_set.h): each model through make_plan, then planned as its runtime
// co-locates it; the GPUs' sums, one verdict, and the joint solve over the runtime's context knob (search.h) and
// vLLM's --gpu-memory-utilization; the contexts weighted; the host RAM summed. It knows no runtime's memory rule: only
// runtime_info, plan.h, search.h and the plans' published figures (devices, detail.host_ram of docs/json.md).
#include "kvfit/model_set.h"

#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/search.h"
#include "kvfit/units.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kvfit {
namespace {

// Runtimes whose process sizes itself from the memory free when it starts (model_set.h): planned in order, each on
// what the ones before it hold. vLLM (a fraction of the total) and MLX (the device's working-set limit) are not.
bool plans_on_free_memory(const runtime_info & rt) {
    return rt.name == "llama.cpp" || rt.name == "ollama" || rt.name == "sglang";
}

std::string colocation_line(const runtime_info & rt, size_t n_gpus, uint32_t max_loaded) {
    if (rt.name == "llama.cpp") {
        return fmt::format("one llama-server process per model (the router starts one child per model: "
                           "tools/server/server-models.cpp); each loads into the memory the ones before it left{}",
                           max_loaded ? fmt::format("; --models-max {}", max_loaded) : "");
    }
    if (rt.name == "ollama") {
        return fmt::format("one runner per model; the scheduler loads one beside the others only when it fits the free "
                           "VRAM, at most OLLAMA_MAX_LOADED_MODELS={} (server/sched.go{})",
                           max_loaded ? max_loaded : 3 * std::max<size_t>(1, n_gpus),
                           max_loaded ? "" : ": defaultModelsPerGPU 3 x the GPUs");
    }
    if (rt.name == "vllm") {
        return "one vLLM instance per model; each budgets --gpu-memory-utilization x the GPU's total and refuses to "
               "start when less is free (vllm/v1/worker/gpu_worker.py): the budgets add up";
    }
    if (rt.name == "sglang") {
        return "one SGLang server per model; --mem-fraction-static is of the memory free when its weights start to load "
               "(model_runner.py): each planned on what the ones before it hold";
    }
    return "one mlx-lm process per model on one unified memory; the Metal working-set limit is the device's, so the "
           "plans add up within it";
}

// The bytes of plan `p` on GPU `g`: its non-host devices are the machine's GPUs in order.
const device_plan * gpu_device(const runtime_plan & p, size_t g) {
    size_t k = 0;
    for (const auto & d : p.devices) {
        if (d.is_host) continue;
        if (k++ == g) return &d;
    }
    return nullptr;
}

// A plan's published host RAM section (detail.host_ram, docs/json.md; llama.cpp's host_ram.cpp writes it), or null.
const nlohmann::ordered_json * host_ram_of(const runtime_plan & p) {
    return p.detail.is_object() && p.detail.contains("host_ram") && p.detail["host_ram"].is_object() ? &p.detail["host_ram"]
                                                                                                     : nullptr;
}

uint64_t json_bytes(const nlohmann::ordered_json & j, const char * key) {
    return j.contains(key) && j[key].is_number_unsigned() ? j[key].get<uint64_t>() : 0;
}

// The bytes of line `name` of a host RAM section (0 when absent).
uint64_t host_line(const nlohmann::ordered_json & h, std::string_view name) {
    if (!h.contains("lines") || !h["lines"].is_array()) return 0;
    for (const auto & l : h["lines"]) {
        if (l.is_object() && l.value("name", std::string()) == name) return json_bytes(l, "bytes");
    }
    return 0;
}

// The host RAM of the set (set_host): each process's host part as its plan states it, summed; the page cache of a file
// mapped by several members (`files[i]` equal) counted once, at its largest (the kernel keeps one copy of a file's
// pages for every shared mapping: mmap(2) MAP_SHARED; llama-mmap.cpp maps the GGUF so).
set_host host_of(const std::vector<const runtime_plan *> & plans, const std::vector<std::string> & files) {
    const size_t n = plans.size();
    set_host h;
    h.member_bytes.assign(n, 0);
    h.shared_bytes.assign(n, 0);
    std::vector<uint64_t> mapped(n, 0);
    uint64_t prompt_caches = 0;
    for (size_t i = 0; i < n; ++i) {
        if (const nlohmann::ordered_json * r = host_ram_of(*plans[i])) {
            h.member_bytes[i] = json_bytes(*r, "needed_bytes");
            prompt_caches += json_bytes(*r, "total_bytes") - std::min(json_bytes(*r, "total_bytes"), h.member_bytes[i]);
            mapped[i] = host_line(*r, "page_cache");
            if (r->value("known", false)) h.capacity_bytes = std::max(h.capacity_bytes, json_bytes(*r, "capacity_bytes"));
        } else {
            // no host RAM section (no --ram): the host device's buffers; its weights are the file's mapped pages when
            // the runtime maps the GGUF (llama.cpp's default, settings.mmap), so a file two members map counts once
            // here too
            const auto & d = plans[i]->detail;
            const bool mmap = d.is_object() && d.contains("settings") && d["settings"].is_object() &&
                              d["settings"].value("mmap", false);
            for (const auto & dev : plans[i]->devices) {
                if (!dev.is_host) continue;
                h.member_bytes[i] += dev.used_bytes();
                if (mmap) mapped[i] += dev.bytes_of("weights");
            }
        }
    }
    for (size_t i = 0; i < n; ++i) {
        if (mapped[i] == 0 || files[i].empty()) continue;
        size_t owner = i; // the largest mapping of this file (the first among equals) is the one counted
        for (size_t k = 0; k < n; ++k) {
            if (files[k] == files[i] && (mapped[k] > mapped[owner] || (mapped[k] == mapped[owner] && k < owner))) owner = k;
        }
        if (owner != i) h.shared_bytes[i] = mapped[i];
    }
    for (size_t i = 0; i < n; ++i) h.used_bytes += h.member_bytes[i] - h.shared_bytes[i];
    h.with_cache_bytes = h.used_bytes + prompt_caches;
    return h;
}

// The set placed on the machine: each member planned by `plan_one` (on the whole machine, or on what the earlier
// members left), the GPUs' sums and the verdict.
struct placement {
    std::vector<runtime_plan> plans;
    std::vector<set_device> devices;
    set_host host;
    std::vector<std::string> refusals;
    bool fits = true;
};

using plan_fn = std::function<runtime_plan(size_t i, const machine & mc)>;

placement colocate(const runtime_info & rt, size_t n, const machine & mc, const std::vector<std::string> & names,
                   const std::vector<std::string> & files, const plan_fn & plan_one) {
    placement out;
    const bool sequential = plans_on_free_memory(rt);
    const size_t n_gpu = mc.gpus.size();
    out.devices.resize(n_gpu);
    std::vector<uint64_t> held(n_gpu, 0);
    std::vector<bool> capacity_known(n_gpu, false);
    for (size_t g = 0; g < n_gpu; ++g) {
        // several GPUs (often alike) are told apart by their index, as the runtimes number them
        out.devices[g].name = n_gpu > 1 ? fmt::format("GPU{} ({})", g, mc.gpus[g].name) : mc.gpus[g].name;
        out.devices[g].member_bytes.assign(n, 0);
    }
    for (size_t i = 0; i < n; ++i) {
        bool vllm_refused = false; // one refusal per instance: the first GPU short at its start
        machine mi = mc;
        if (sequential) {
            for (size_t g = 0; g < n_gpu; ++g) {
                // what the vendor's tool reports stays the GPU's total: SGLang's default --mem-fraction-static reads
                // nvidia-smi's memory.total (server_args._handle_gpu_memory_settings), not what the servers before it
                // left (a set planned it from the rest: "--mem-fraction-static '-0.013': expected a number greater than 0 and below 1")
                if (mi.gpus[g].reported_bytes == 0) mi.gpus[g].reported_bytes = mc.gpus[g].memory_bytes;
                mi.gpus[g].memory_bytes -= std::min(held[g], mi.gpus[g].memory_bytes);
            }
        }
        out.plans.push_back(plan_one(i, mi));
        const runtime_plan & p = out.plans.back();
        if (!p.fits) {
            out.fits = false;
            out.refusals.push_back(fmt::format("model {} ({}) does not fit {}", i + 1, names[i],
                                               sequential && i > 0 ? "in the memory the models before it left"
                                                                   : "on these GPUs"));
        }
        for (size_t g = 0; g < n_gpu; ++g) {
            const device_plan * d = gpu_device(p, g);
            if (!d) continue;
            set_device & sd = out.devices[g];
            // vLLM: an instance whose budget exceeds what is free when it starts refuses (gpu_worker.py init_device:
            // init_snapshot.free_memory < requested_memory raises "Free memory on device ... on startup is less than
            // desired GPU memory utilization")
            if (rt.name == "vllm" && i > 0 && held[g] + d->used_bytes() > d->capacity_bytes && !vllm_refused) {
                vllm_refused = true;
                out.fits = false;
                out.refusals.push_back(fmt::format("model {} ({}): vLLM refuses to start it: {} free on {} at its start "
                                                   "is less than its budget {} (gpu_worker.py)", i + 1, names[i],
                                                   human_bytes(d->capacity_bytes - std::min(held[g], d->capacity_bytes)),
                                                   sd.name, human_bytes(d->used_bytes())));
            }
            if (!capacity_known[g]) { // the device's capacity as the runtime reads it, the earlier members added back
                sd.capacity_bytes = d->capacity_bytes + (sequential ? held[g] : 0);
                capacity_known[g] = true;
            }
            sd.member_bytes[i] = d->used_bytes();
            sd.used_bytes += d->used_bytes();
            if (sequential) sd.reserved_bytes = d->reserved_bytes; // the margin of the last one started
            held[g] += d->used_bytes();
        }
    }
    for (size_t g = 0; g < n_gpu; ++g) {
        set_device & sd = out.devices[g];
        if (!capacity_known[g]) sd.capacity_bytes = mc.gpus[g].memory_bytes;
        if (!sd.fits()) {
            out.fits = false;
            out.refusals.push_back(fmt::format("{}: the models need {} and {} kept free, of {}: short by {}", sd.name,
                                               human_bytes(sd.used_bytes), human_bytes(sd.reserved_bytes),
                                               human_bytes(sd.capacity_bytes), human_bytes(uint64_t(-sd.free_bytes()))));
        }
    }
    // the host RAM: every process's host part adds up; with the RAM known it is the set's verdict as it is one
    // model's (host_ram.cpp: the need over --ram does not fit)
    std::vector<const runtime_plan *> ps;
    for (const auto & p : out.plans) ps.push_back(&p);
    out.host = host_of(ps, files);
    if (!out.host.fits()) {
        out.fits = false;
        out.refusals.push_back(fmt::format("host RAM: the models need {} of {} (--ram): short by {}",
                                           human_bytes(out.host.used_bytes), human_bytes(out.host.capacity_bytes),
                                           human_bytes(out.host.used_bytes - out.host.capacity_bytes)));
    }
    return out;
}

flag_values with_context(flag_values f, const knob & k, uint64_t v) {
    for (const auto & [name, value] : k.with) f.set(name, std::string(value));
    f.set(k.flag, std::to_string(v));
    return f;
}

std::string hundredths(uint64_t p) { return fmt::format("{}.{:02}", p / 100, p % 100); }

} // namespace

set_result plan_set(const set_request & q, const set_model_loader & load, const gpu_parser & parse_gpus) {
    const size_t n = q.members.size();
    if (n < 2) throw error("a set needs at least 2 models");
    if (n > max_set_models) throw error(fmt::format("a set of {} models exceeds the limit {}", n, max_set_models));
    const runtime_info & rt = find_runtime(q.members[0].runtime);
    for (size_t i = 1; i < n; ++i) {
        if (&find_runtime(q.members[i].runtime) != &rt) {
            throw error(fmt::format("model {}: --runtime {} differs from model 1's {}: a set runs under one runtime", i + 1,
                                    q.members[i].runtime, rt.name));
        }
        if (q.members[i].gpu != q.members[0].gpu) throw error(fmt::format("model {}: a set shares one --gpu", i + 1));
    }
    if (q.members[0].gpu.empty()) throw error("a set needs --gpu (the GPUs the models share)");
    // Ollama's scheduler keys its runners by the model (server/sched.go: s.loaded[pending.model.ModelPath]); the same
    // model with other options is reloaded (needsReload), not loaded twice
    if (rt.name == "ollama") {
        for (size_t i = 1; i < n; ++i) {
            for (size_t k = 0; k < i; ++k) {
                if (q.members[i].model == q.members[k].model) {
                    throw error(fmt::format("model {} ({}) is model {} again: Ollama keeps one runner per model "
                                            "(server/sched.go), so a model is in a set once", i + 1, q.members[i].model, k + 1));
                }
            }
        }
    }
    if (q.max_loaded && rt.name != "llama.cpp" && rt.name != "ollama") {
        throw error(fmt::format("--models-max / --max-loaded-models apply to llama.cpp and Ollama, not {}", rt.display));
    }
    // the GPUs once (--gpu auto detects once), then each model alone on them
    const std::vector<device_spec> gpus = parse_gpus ? parse_gpus(q.members[0].gpu) : parse_gpu_list(q.members[0].gpu);
    const gpu_parser same_gpus = [&](const std::string &) { return gpus; };
    set_result s;
    s.runtime = &rt;
    std::vector<plan_result> alone;
    std::vector<flag_values> flags;
    // how an error names a member: its MODEL, or what it is when the HTTP body uploaded the file (no name)
    const auto member = [&](size_t i) {
        return fmt::format("model {} ({})", i + 1, q.members[i].model.empty() ? "an uploaded file" : q.members[i].model);
    };
    for (size_t i = 0; i < n; ++i) {
        s.specs.push_back(q.members[i].model);
        try {
            alone.push_back(make_plan(q.members[i], [&](warnings & w) { return load(i, w); }, same_gpus));
        } catch (const error & e) {
            // a flag's error when every model has the same flags is the command line's, not this model's
            const bool same_flags = std::all_of(q.members.begin(), q.members.end(),
                                                [&](const plan_request & r) { return r.flags.all() == q.members[i].flags.all(); });
            if (same_flags && std::string_view(e.what()).starts_with("-")) throw;
            throw error(fmt::format("{}: {}", member(i), e.what()));
        }
        // a model of a set runs at one context: a list (-c 8192,32768, or -c given twice) makes one model's table,
        // which a set does not plan (it took the last value silently)
        if (!rt.context.flag.empty()) {
            std::vector<std::string> values;
            for (const std::string & v : q.members[i].flags.list(rt.context.flag)) {
                for (size_t a = 0; a <= v.size();) {
                    const size_t b = std::min(v.find(',', a), v.size());
                    values.push_back(v.substr(a, b - a));
                    a = b + 1;
                }
            }
            if (values.size() > 1) {
                throw error(fmt::format("{}: {} has {} values ({}): a model of a set runs at one context; give "
                                        "each model its own (MODEL@{}=N)", member(i), rt.context.spelled,
                                        values.size(), fmt::join(values, ", "), rt.context.spelled));
            }
        }
        s.fits_alone.push_back(alone.back().plan.fits);
        flags.push_back(alone.back().flags);
        // Ollama's default num_ctx is its VRAM tier of the GPUs' total (rules.cpp tier_num_ctx), not of what is free
        // when a model loads beside others: the tier of the whole machine is kept
        if (rt.name == "ollama" && !flags.back().has("num_ctx")) {
            flags.back().set("num_ctx", std::to_string(alone.back().plan.context_tokens));
        }
    }
    const machine mc = alone[0].target;
    s.colocation = colocation_line(rt, mc.gpus.size(), q.max_loaded);
    std::vector<std::string> names, files;
    for (size_t i = 0; i < n; ++i) {
        names.push_back(alone[i].model.name);
        // the file each process maps: the same MODEL with the same weight bytes (a catalog name at one --weights)
        // (an upload has no MODEL: each is its own file, never one page cache with another upload)
        files.push_back(q.members[i].model.empty() ? fmt::format("upload {}", i)
                                                   : fmt::format("{}\n{}", q.members[i].model, alone[i].model.weights.total_bytes()));
    }
    // one machine, one RAM: the host verdict of every model is against the same --ram (or none)
    const auto ram_of = [&](size_t i) {
        const nlohmann::ordered_json * h = host_ram_of(alone[i].plan);
        return h && h->value("known", false) ? json_bytes(*h, "capacity_bytes") : uint64_t(0);
    };
    for (size_t i = 1; i < n; ++i) {
        if (ram_of(i) == ram_of(0)) continue;
        // every model's --ram named, so no one model is blamed for the others' (a member's @--ram, or one given to all)
        std::string each;
        for (size_t j = 0; j < n; ++j) {
            each += fmt::format("{}model {}: {}", j ? ", " : "", j + 1, ram_of(j) ? human_bytes(ram_of(j)) : "not given");
        }
        throw error(fmt::format("--ram differs between the models ({}): a set shares one machine's RAM; give --ram "
                                "once for all", each));
    }
    if (!q.weights.empty()) {
        if (q.weights.size() != n) throw error(fmt::format("weights: {} given for {} models", q.weights.size(), n));
        for (size_t i = 0; i < n; ++i) {
            if (q.weights[i] < 1 || q.weights[i] > 1000 * set_weight_one) {
                throw error(fmt::format("model {}: weight {}/1000: expected 0.001 to 1000", i + 1, q.weights[i]));
            }
        }
        if (rt.context.flag.empty() || !rt.context.range) {
            throw error(fmt::format("weights: {} has no context setting to weight", rt.display));
        }
        s.weights = q.weights;
    }

    // the set as it runs: each member with the planner's searches (plan_model), its source's warnings kept
    const placement placed = colocate(rt, n, mc, names, files, [&](size_t i, const machine & mi) {
        if (i == 0 || !plans_on_free_memory(rt)) {
            s.plans.push_back(alone[i]);
        } else {
            try {
                s.plans.push_back(plan_model(rt, alone[i].model, alone[i].plan.warnings, flags[i], mi));
            } catch (const error & e) { // the runtime refuses outright with what is left (a GPU with nothing free)
                plan_result r = alone[i];
                r.plan.fits = false;
                r.plan.refusals.push_back(fmt::format("beside the models before it: {}", e.what()));
                s.plans.push_back(std::move(r));
            }
            auto & w = s.plans.back().plan.warnings; // alone's warnings (source + runtime) then the runtime's again
            std::vector<std::string> unique;
            for (const auto & x : w) {
                if (std::find(unique.begin(), unique.end(), x) == unique.end()) unique.push_back(x);
            }
            w = std::move(unique);
        }
        return s.plans.back().plan;
    });
    if (rt.name == "ollama") {
        for (size_t i = 0; i < n; ++i) {
            if (q.members[i].flags.has("num_ctx")) continue;
            s.plans[i].plan.notes.push_back(fmt::format("num_ctx {}: Ollama's default for the GPUs' total VRAM (its tier), "
                                                        "not for what is free beside the other models",
                                                        alone[i].plan.context_tokens));
        }
    }
    s.devices = placed.devices;
    s.host = placed.host;
    s.refusals = placed.refusals;
    s.fits = placed.fits;

    // loaded-model limits: models past them are unloaded (least recently used), so the set does not run together
    const uint32_t limit = rt.name == "ollama" ? (q.max_loaded ? q.max_loaded : uint32_t(3 * std::max<size_t>(1, mc.gpus.size())))
                                               : q.max_loaded;
    const bool over_limit = limit && n > limit;
    if (over_limit) {
        s.fits = false;
        s.refusals.push_back(rt.name == "ollama"
                                 ? fmt::format("OLLAMA_MAX_LOADED_MODELS={}: {} models; the scheduler unloads one to load "
                                               "the next (server/sched.go), so they do not run together", limit, n)
                                 : fmt::format("--models-max {}: {} models; the router unloads the least recently used "
                                               "(server-models.cpp unload_lru), so they do not run together", limit, n));
    }
    if (rt.name == "llama.cpp" && !q.max_loaded && n > 4) {
        s.warnings.push_back(fmt::format("{} models: llama-server's router keeps 4 loaded by default (--models-max 4, "
                                         "common/common.h models_max); planned as separate processes (give --models-max to plan the "
                                         "router)", n));
    }
    if ((rt.name == "llama.cpp" || rt.name == "ollama") && !s.devices.empty()) {
        // a llama.cpp plan states its buffers (ggml's allocations); the driver's context of each process is outside
        // them, and one margin per GPU is all that covers n of them: an assumption that can change the verdict
        s.warnings.push_back(fmt::format("each of the {} {} processes holds its own GPU driver context outside its "
                                         "buffers (not modelled); only the {} kept free per GPU covers them", n,
                                         rt.name == "ollama" ? "runner" : "llama-server",
                                         human_bytes(s.devices[0].reserved_bytes)));
    }
    if (s.host.known() && s.host.fits() && s.host.with_cache_bytes > s.host.capacity_bytes) {
        // each llama-server's prompt cache evicts within its --cache-ram (server-task.cpp:1750), as for one model
        s.warnings.push_back(fmt::format("host RAM: with every llama-server's prompt cache at its --cache-ram limit the "
                                         "models hold {} of {} (--ram); each evicts its oldest prompts to stay within "
                                         "its limit (tools/server/server-task.cpp:1750), so the set fits, but the OS "
                                         "may swap first: a smaller --cache-ram per model keeps them within the RAM",
                                         human_bytes(s.host.with_cache_bytes), human_bytes(s.host.capacity_bytes)));
    }
    if (rt.name == "sglang") {
        s.warnings.push_back("SGLang: each server's activations and CUDA graphs come from the memory left after its "
                             "static pool; with several servers on one GPU that headroom is shared, and kvfit counts "
                             "only what each holds after start (CUDA context, weights, pools)");
    }
    if (q.members[0].strict && !s.warnings.empty()) { // --strict: the set's assumptions are refused as a model's are
        std::string all;
        for (const auto & w : s.warnings) all += (all.empty() ? "" : "; ") + w;
        throw error(fmt::format("strict: {} warning{} refused: {}", s.warnings.size(), s.warnings.size() == 1 ? "" : "s", all));
    }
    // fewer models loaded at once is no joint change of settings: no alternative is searched past the limit
    if (over_limit || (s.fits && s.weights.empty())) return s;

    const auto probe = [&](const std::vector<flag_values> & f) {
        try {
            return colocate(rt, n, mc, names, files, [&](size_t i, const machine & mi) {
                return rt.plan(alone[i].model, f[i], mi);
            }).fits;
        } catch (const error &) { // a value the runtime refuses outright does not fit
            return false;
        }
    };
    // joint solve 1 with weights: model i's context is w_i x t rounded down to its context step (the knob's range:
    // llama.cpp pads n_ctx to 256 per stream, so -c moves in 256 x streams; the others take any whole token count),
    // for the largest t (tokens of weight 1) at which the set fits together, by the planner's one search (search.h:
    // each context grows with t, memory with each context). t runs from the smallest that gives every model its
    // range's lower end to the largest that keeps every model within its upper end (the training context), so the
    // proportion holds exactly up to the rounding. Searched whether or not the set fits as given: it is what was asked.
    if (!s.weights.empty()) {
        std::vector<std::string> ws;
        for (uint32_t w : s.weights) ws.push_back(set_weight_text(w));
        s.tried.push_back(fmt::format("{} in proportion {}", rt.context.spelled, fmt::join(ws, " : ")));
        std::vector<knob_range> ranges;
        uint64_t t_lo = 1, t_hi = UINT64_MAX;
        bool usable = true;
        for (size_t i = 0; i < n; ++i) {
            const knob_range r = rt.context.range(alone[i].model, flags[i]);
            usable &= r.step > 0 && r.lo <= r.hi;
            ranges.push_back(r);
            const uint64_t w = s.weights[i];
            t_lo = std::max(t_lo, (r.lo * set_weight_one + w - 1) / w); // w x t >= lo, lo a multiple of the step
            t_hi = std::min(t_hi, r.hi * set_weight_one / w);           // w x t <= hi
        }
        const auto contexts = [&](uint64_t t) {
            std::vector<uint64_t> c;
            for (size_t i = 0; i < n; ++i) {
                const uint64_t exact = s.weights[i] * t / set_weight_one;
                c.push_back(std::max(ranges[i].lo, exact / ranges[i].step * ranges[i].step));
            }
            return c;
        };
        const auto at = [&](uint64_t t) {
            const std::vector<uint64_t> c = contexts(t);
            std::vector<flag_values> f = flags;
            for (size_t i = 0; i < n; ++i) f[i] = with_context(f[i], rt.context, c[i]);
            return f;
        };
        if (usable && t_lo <= t_hi) {
            if (const auto t = largest_fitting(t_lo, t_hi, 1, [&](uint64_t v) { return probe(at(v)); })) {
                set_alternative a{"weighted_context", {}, contexts(*t), *t, *t == t_hi};
                for (uint64_t c : a.values) a.flags.push_back(fmt::format("{} {}", rt.context.spelled, c));
                s.alternatives.push_back(std::move(a));
            }
        }
    }
    if (s.fits) return s;

    // joint solve 1 without weights: the largest context equal for every model that fits together (search.h over the
    // knob's range common to all: the largest lower end, the smallest upper end, the largest step)
    if (s.weights.empty() && !rt.context.flag.empty() && rt.context.range) {
        s.tried.push_back(fmt::format("an equal {}", rt.context.spelled));
        knob_range common{0, UINT64_MAX, 1};
        for (size_t i = 0; i < n && common.step > 0; ++i) {
            const knob_range r = rt.context.range(alone[i].model, flags[i]);
            common.lo = std::max(common.lo, r.lo);
            common.hi = std::min(common.hi, r.hi);
            common.step = r.step == 0 ? 0 : std::max(common.step, r.step); // step 0: the knob does not apply
        }
        if (common.step > 0 && common.lo <= common.hi) {
            const auto at = [&](uint64_t v) {
                std::vector<flag_values> f = flags;
                for (auto & x : f) x = with_context(x, rt.context, v);
                return f;
            };
            if (const auto v = largest_fitting(common.lo, common.hi, common.step, [&](uint64_t c) { return probe(at(c)); })) {
                set_alternative a{"equal_context", {}, {}, 0, *v == common.lo + (common.hi - common.lo) / common.step * common.step};
                for (size_t i = 0; i < n; ++i) a.flags.push_back(fmt::format("{} {}", rt.context.spelled, *v)), a.values.push_back(*v);
                s.alternatives.push_back(std::move(a));
            }
        }
    }
    // joint solve 2 (vLLM): each instance's smallest --gpu-memory-utilization that fits alone (hundredths), the rest
    // of the GPU shared equally; kept when the set then fits
    if (rt.name == "sglang") { // each server in start order: its smallest --mem-fraction-static on what is left
        s.tried.push_back("each server's smallest --mem-fraction-static");
        std::vector<flag_values> f = flags;
        std::vector<uint64_t> u;
        for (size_t i = 0; i < n; ++i) {
            const auto at = [&](uint64_t p) {
                std::vector<flag_values> g(f.begin(), f.begin() + ptrdiff_t(i) + 1);
                g[i].set("mem_fraction_static", hundredths(p));
                try {
                    return colocate(rt, i + 1, mc, names, files, [&](size_t k, const machine & mi) {
                        return rt.plan(alone[k].model, g[k], mi);
                    }).fits;
                } catch (const error &) {
                    return false;
                }
            };
            const auto p = smallest_fitting(1, 99, 1, at);
            if (!p) break;
            u.push_back(*p);
            f[i].set("mem_fraction_static", hundredths(*p));
        }
        if (u.size() == n && probe(f)) {
            set_alternative a{"fraction_split", {}, u};
            for (uint64_t p : u) a.flags.push_back("--mem-fraction-static " + hundredths(p));
            s.alternatives.push_back(std::move(a));
        }
    }
    if (rt.name == "vllm") {
        s.tried.push_back("a --gpu-memory-utilization split");
        const auto with_util = [](flag_values f, uint64_t p) {
            f.set("gpu_memory_utilization", hundredths(p));
            return f;
        };
        std::vector<uint64_t> least;
        for (size_t i = 0; i < n; ++i) {
            const auto p = smallest_fitting(1, 100, 1, [&](uint64_t u) {
                try {
                    return rt.plan(alone[i].model, with_util(flags[i], u), mc).fits;
                } catch (const error &) {
                    return false;
                }
            });
            if (!p) break;
            least.push_back(*p);
        }
        uint64_t sum = 0;
        for (uint64_t p : least) sum += p;
        if (least.size() == n && sum <= 100) {
            for (const uint64_t share : {(100 - sum) / n, uint64_t(0)}) {
                std::vector<flag_values> f;
                std::vector<uint64_t> u;
                for (size_t i = 0; i < n; ++i) u.push_back(least[i] + share), f.push_back(with_util(flags[i], u.back()));
                if (!probe(f)) continue;
                set_alternative a{"utilization_split", {}, u};
                for (uint64_t p : u) a.flags.push_back("--gpu-memory-utilization " + hundredths(p));
                s.alternatives.push_back(std::move(a));
                break;
            }
        }
    }
    // joint solve 3: one GPU per model. Each process sees only the GPU it is given (CUDA_VISIBLE_DEVICES, or
    // HIP_VISIBLE_DEVICES on AMD: the CUDA / HIP runtime enumerates only those), so its buffers, compute buffer and
    // context are on that GPU alone; the models given one GPU are co-located there by the runtime's rule above. Found by
    // a depth-first search in start order, each GPU's group re-planned as it grows, equal empty GPUs tried once, at most
    // k_max_group_checks groups planned. Not for Ollama (its scheduler places each runner itself, server/sched.go) nor
    // a machine of one device (MLX's unified memory).
    if (mc.gpus.size() >= 2 && rt.name != "ollama") {
        s.tried.push_back("one GPU per model");
        constexpr size_t k_max_group_checks = 512;
        const size_t n_gpu = mc.gpus.size();
        std::vector<size_t> gpu_of(n, 0);
        size_t checks = 0;
        // each model's plan in its group: the group's members before it are planned first, so a later member added to
        // the group (or taken out again) leaves them as they are; the last check of each group holds the final plans
        std::vector<runtime_plan> in_group(n);
        const auto group_fits = [&](size_t g, size_t upto) {
            std::vector<size_t> members;
            for (size_t i = 0; i <= upto; ++i) {
                if (gpu_of[i] == g) members.push_back(i);
            }
            std::vector<std::string> group_names, group_files;
            for (size_t i : members) group_names.push_back(names[i]), group_files.push_back(files[i]);
            machine one;
            one.gpus = {mc.gpus[g]};
            ++checks;
            try {
                const placement pl = colocate(rt, members.size(), one, group_names, group_files, [&](size_t k, const machine & mi) {
                    return rt.plan(alone[members[k]].model, flags[members[k]], mi);
                });
                for (size_t k = 0; k < members.size(); ++k) in_group[members[k]] = pl.plans[k];
                return pl.fits;
            } catch (const error &) {
                return false;
            }
        };
        const auto same_gpu = [&](size_t a, size_t b) {
            return mc.gpus[a].name == mc.gpus[b].name && mc.gpus[a].memory_bytes == mc.gpus[b].memory_bytes;
        };
        std::function<bool(size_t)> place = [&](size_t i) {
            if (i == n) return true;
            for (size_t g = 0; g < n_gpu && checks < k_max_group_checks; ++g) {
                bool used = false, earlier_empty_twin = false;
                for (size_t k = 0; k < i; ++k) used |= gpu_of[k] == g;
                for (size_t h = 0; h < g && !used; ++h) {
                    bool h_used = false;
                    for (size_t k = 0; k < i; ++k) h_used |= gpu_of[k] == h;
                    earlier_empty_twin |= !h_used && same_gpu(g, h);
                }
                if (earlier_empty_twin) continue; // an empty GPU like one tried already: the same placement
                gpu_of[i] = g;
                if (group_fits(g, i) && place(i + 1)) return true;
            }
            return false;
        };
        bool spread = false;
        if (place(0)) {
            for (size_t i = 1; i < n; ++i) spread |= gpu_of[i] != gpu_of[0];
            // the groups share the host: their host parts add up against the RAM as the set's do
            std::vector<const runtime_plan *> ps;
            for (const auto & p : in_group) ps.push_back(&p);
            spread &= host_of(ps, files).fits();
        }
        if (spread) {
            // the runtime numbers only its vendor's GPUs (HIP the AMD ones, CUDA the NVIDIA ones), and CUDA orders them
            // fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID: with unlike GPUs the index is --gpu's order among
            // that vendor's, which PCI_BUS_ID gives when --gpu lists them in bus order (nvidia-smi's)
            bool unlike = false;
            for (size_t g = 1; g < n_gpu; ++g) unlike |= !same_gpu(g, 0);
            set_alternative a{"gpu_assignment", {}, {}};
            for (size_t i = 0; i < n; ++i) {
                const size_t g = gpu_of[i];
                const bool amd = mc.gpus[g].vendor == "AMD";
                size_t index = 0;
                for (size_t h = 0; h < g; ++h) index += (mc.gpus[h].vendor == "AMD") == amd;
                a.values.push_back(g);
                a.flags.push_back(fmt::format("{}{}={} (GPU{}, {})", unlike && !amd ? "CUDA_DEVICE_ORDER=PCI_BUS_ID " : "",
                                              amd ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES", index, g,
                                              mc.gpus[g].name));
            }
            s.alternatives.push_back(std::move(a));
        }
    }
    return s;
}

set_request set_request_from_json(nlohmann::json body, const std::vector<std::string> & extra_fields,
                                  std::vector<nlohmann::json> * bodies) {
    if (!body.is_object() || !body.contains("models")) throw error("request: a set needs the field 'models'");
    // every model of a set is named in "models": a "model" beside it named none of them and was silently dropped
    if (body.contains("model")) throw error("request: 'model' and 'models' together: put each model in 'models'");
    nlohmann::json models = std::move(body["models"]);
    body.erase("models");
    if (!models.is_array()) throw error("request: field 'models': expected an array of models");
    if (models.size() > max_set_models) {
        throw error(fmt::format("a set of {} models exceeds the limit {}", models.size(), max_set_models));
    }
    set_request q;
    if (body.contains("max_loaded")) {
        const nlohmann::json & m = body["max_loaded"];
        if (!m.is_number_unsigned() || m.get<uint64_t>() > 1024) {
            throw error("request: field 'max_loaded': expected a whole number from 0 to 1024");
        }
        q.max_loaded = m.get<uint32_t>();
        body.erase("max_loaded");
    }
    // a weight is one model's (the joint solve's proportion): in its item, never the body's (every model's alike)
    if (body.contains("weight")) throw error("request: field 'weight': a weight is one model's: give it in its 'models' item");
    std::vector<uint32_t> weights(models.size(), set_weight_one);
    bool weighted = false;
    for (size_t i = 0; i < models.size(); ++i) {
        nlohmann::json member = body;
        if (models[i].is_string()) {
            member["model"] = models[i];
        } else if (models[i].is_object()) {
            if (models[i].contains("weight")) {
                const nlohmann::json & w = models[i]["weight"];
                // a number as JSON writes it (2, 1.5) or a string ("1.5"): the CLI's text either way
                const std::string text = w.is_string() ? w.get<std::string>() : w.is_number() ? w.dump() : std::string();
                try {
                    if (!w.is_string() && !w.is_number()) throw error(fmt::format("weight {}: expected a number from 0.001 to 1000", w.dump()));
                    // JSON's 2.0 is 2: a whole float's ".0" is no decimal given
                    weights[i] = parse_set_weight(w.is_number_float() && text.ends_with(".0") ? text.substr(0, text.size() - 2) : text);
                } catch (const error & e) {
                    throw error(fmt::format("request: field 'models' item {}: {}", i + 1, e.what()));
                }
                weighted = true;
                models[i].erase("weight");
            }
            for (auto & [key, value] : models[i].items()) member[key] = std::move(value);
        } else {
            throw error(fmt::format("request: field 'models' item {}: expected a name or an object", i + 1));
        }
        // A set plans no default model (a single plan's body without "model" plans default_model_name()): an item
        // without a model, or with "", is refused as the CLI refuses MODEL "" ("model: empty value").
        const auto named = [&](const std::string & f) { return member.contains(f) && !member[f].is_null(); };
        if (named("model") && member["model"].is_string() && member["model"].get_ref<const std::string &>().empty()) {
            throw error(fmt::format("request: field 'models' item {}: model: empty value", i + 1));
        }
        if (!named("model") && std::none_of(extra_fields.begin(), extra_fields.end(), named)) {
            throw error(fmt::format("request: field 'models' item {}: names no model (a set has no default model)", i + 1));
        }
        q.members.push_back(plan_request_from_json(member, extra_fields));
        if (bodies) bodies->push_back(std::move(member));
    }
    if (weighted) q.weights = std::move(weights);
    return q;
}

uint32_t parse_set_weight(std::string_view text) {
    // digits, then at most 3 decimals: no sign, exponent, nan or inf (a bound on the proportion and exact arithmetic)
    const auto bad = [&] {
        return error(fmt::format("weight '{}': expected a number from 0.001 to 1000 (at most 3 decimals)", text));
    };
    const size_t dot = text.find('.');
    const std::string_view whole = text.substr(0, dot);
    const std::string_view frac = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
    const auto digits = [](std::string_view d) { return std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; }); };
    if (whole.empty() || whole.size() > 4 || !digits(whole) || frac.size() > 3 || !digits(frac) ||
        (dot != std::string_view::npos && frac.empty())) {
        throw bad();
    }
    uint64_t v = 0;
    for (char c : whole) v = v * 10 + uint64_t(c - '0');
    for (size_t k = 0; k < 3; ++k) v = v * 10 + (k < frac.size() ? uint64_t(frac[k] - '0') : 0);
    if (v < 1 || v > 1000 * set_weight_one) throw bad();
    return uint32_t(v);
}

std::string set_weight_text(uint32_t w) {
    std::string out = std::to_string(w / set_weight_one);
    if (w % set_weight_one == 0) return out;
    std::string frac = fmt::format("{:03}", w % set_weight_one);
    while (frac.back() == '0') frac.pop_back();
    return out + "." + frac;
}

std::pair<std::string, flag_values> parse_set_member(const std::string & text, const runtime_info & rt, uint32_t * weight) {
    // settings start at the last '@' followed by '-' (a flag) or by "weight=": hf:org/name@rev stays a model, and so
    // does a file or a model folder whose name holds "@-" (runs/m@-q4.gguf, models/m@-c=1/), when it exists
    flag_values f;
    std::error_code ec;
    if (std::filesystem::exists(text, ec)) return {text, f};
    size_t at = std::string::npos;
    for (size_t p = text.rfind('@'); p != std::string::npos; p = p == 0 ? std::string::npos : text.rfind('@', p - 1)) {
        const std::string_view rest = std::string_view(text).substr(p + 1);
        if (rest.starts_with('-') || rest.starts_with("weight=") || rest == "weight" || rest.starts_with("weight,")) {
            at = p;
            break;
        }
    }
    if (at == std::string::npos) return {text, f};
    const std::string model = text.substr(0, at);
    if (model.empty()) throw error(fmt::format("'{}': no model before '@'", text));
    const std::string settings = text.substr(at + 1);
    std::vector<std::string> seen; // a setting given twice (-np=2,-np=4) is refused, not silently the last
    // items are split at ','; a piece that names no flag (neither '-' nor "weight") continues the value before it, so a
    // value with commas reads as llama.cpp's does (-ts=3,1 is -ts 3,1); an empty piece (a doubled comma) is refused
    std::vector<std::string> items;
    for (size_t start = 0; start <= settings.size();) {
        const size_t end = std::min(settings.find(',', start), settings.size());
        const std::string piece = settings.substr(start, end - start);
        start = end + 1;
        if (piece.empty()) throw error(fmt::format("{}: an empty setting (two commas, or one at an end)", text));
        if (!items.empty() && piece[0] != '-' && !piece.starts_with("weight")) items.back() += "," + piece;
        else items.push_back(piece);
        if (end == settings.size()) break;
    }
    for (const std::string & item : items) {
        const size_t eq = item.find('=');
        const std::string name = item.substr(0, eq);
        if (name == "weight") { // the joint solve's weight of this model (model_set.h set_request::weights)
            if (!weight) throw error(fmt::format("{}: 'weight' is for a set of models", text));
            if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
                throw error(fmt::format("{}: 'weight' is given twice; give it once", text));
            }
            seen.push_back(name);
            if (eq == std::string::npos || eq + 1 == item.size()) throw error(fmt::format("{}: 'weight' needs a value (weight=2)", text));
            try {
                *weight = parse_set_weight(item.substr(eq + 1));
            } catch (const error & e) {
                throw error(fmt::format("{}: {}", text, e.what()));
            }
            continue;
        }
        const flag_spec * spec = find_flag_spelled(rt.flags(), name); // any spelling: -ngl, --gpu-layers, --n-gpu-layers
        if (!spec) throw error(fmt::format("{}: '{}' is not one of {}'s flags", text, name, rt.display));
        if (spec->type != flag_type::list || spec->json_name() == rt.context.flag) {
            const std::string key(spec->json_name());
            if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
                throw error(fmt::format("{}: '{}' is given twice; give it once", text, name));
            }
            seen.push_back(key);
        }
        if (spec->type == flag_type::boolean) {
            if (eq != std::string::npos) throw error(fmt::format("{}: '{}' takes no value", text, name));
            f.set(spec->json_name(), "true");
        } else {
            if (eq == std::string::npos || eq + 1 == item.size()) {
                throw error(fmt::format("{}: '{}' needs a value ({}=VALUE)", text, name, name));
            }
            if (spec->type == flag_type::list) f.add(spec->json_name(), item.substr(eq + 1));
            else f.set(spec->json_name(), item.substr(eq + 1));
        }
    }
    return {model, f};
}

} // namespace kvfit
