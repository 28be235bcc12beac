// GPU detection for `--gpu auto` (include/kvfit/detect.h): NVML by dlopen, then nvidia-smi, then rocm-smi.
#include "kvfit/detect.h"
#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/units.h"
#include "core/subprocess.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

namespace kvfit {
namespace {

// A device's figures as a driver reported them, in `unit` bytes ("MiB" for nvidia-smi), refused when they make no
// sense: no memory, more than any device has, or more free than in total.
detected_gpu checked_gpu(const std::string & where, std::string name, uint64_t total, uint64_t free, uint64_t unit,
                         std::string_view unit_name) {
    const uint64_t limit = max_device_memory_bytes / unit;
    if (total == 0) throw error(fmt::format("{}: memory.total is 0", where));
    if (total > limit) {
        throw error(fmt::format("{}: memory.total {} {} exceeds the limit of {} {} (4 TiB)", where, total, unit_name, limit, unit_name));
    }
    if (free > total) {
        throw error(fmt::format("{}: memory.free {} {} exceeds memory.total {} {}", where, free, unit_name, total, unit_name));
    }
    return {std::move(name), total * unit, free * unit};
}

// --- NVML ------------------------------------------------------------------------------------------------------
// Declared here rather than from nvml.h so kvfit builds without the CUDA toolkit. Layouts from NVML's nvml.h:
// nvmlReturn_t is an int (0 = NVML_SUCCESS), nvmlDevice_t an opaque pointer, nvmlMemory_t { total, free, used }.
struct nvml_memory { unsigned long long total, free, used; };
using nvml_device = void *;
using fn_init = int (*)();
using fn_count = int (*)(unsigned int *);
using fn_handle = int (*)(unsigned int, nvml_device *);
using fn_name = int (*)(nvml_device, char *, unsigned int);
using fn_memory = int (*)(nvml_device, nvml_memory *);

bool detect_nvml(gpu_detection & out) {
    const char * off = std::getenv("KVFIT_NO_NVML");
    if (off && std::string_view(off) == "1") {
        out.notes.push_back("NVML skipped (KVFIT_NO_NVML=1)");
        return false;
    }
    void * lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        out.notes.push_back("libnvidia-ml.so.1 not found");
        return false;
    }
    auto sym = [&](const char * n) { return dlsym(lib, n); };
    const auto init = reinterpret_cast<fn_init>(sym("nvmlInit_v2"));
    const auto count = reinterpret_cast<fn_count>(sym("nvmlDeviceGetCount_v2"));
    const auto handle = reinterpret_cast<fn_handle>(sym("nvmlDeviceGetHandleByIndex_v2"));
    const auto name = reinterpret_cast<fn_name>(sym("nvmlDeviceGetName"));
    const auto memory = reinterpret_cast<fn_memory>(sym("nvmlDeviceGetMemoryInfo"));
    const auto shutdown = reinterpret_cast<fn_init>(sym("nvmlShutdown"));
    unsigned int n = 0;
    if (!init || !count || !handle || !name || !memory || init() != 0) {
        out.notes.push_back("NVML present but could not be initialised");
        dlclose(lib);
        return false;
    }
    bool ok = count(&n) == 0 && n <= max_detected_gpus;
    for (unsigned int i = 0; ok && i < n; ++i) {
        nvml_device dev = nullptr;
        char buf[96] = {};
        nvml_memory mem{};
        ok = handle(i, &dev) == 0 && name(dev, buf, sizeof buf) == 0 && memory(dev, &mem) == 0;
        if (!ok) break;
        try {
            out.gpus.push_back(checked_gpu(fmt::format("nvml: device {}", i), buf, mem.total, mem.free, 1, "bytes"));
        } catch (const error & e) {
            out.refused.push_back(e.what());
            ok = false;
        }
    }
    if (shutdown) shutdown();
    dlclose(lib);
    if (!ok) {
        out.gpus.clear();
        out.notes.push_back("NVML query failed");
        return false;
    }
    out.method = "nvml";
    return true;
}

// --- tools on PATH ------------------------------------------------------------------------------------------

// nvidia-smi answers in well under a second once the driver is loaded (a few seconds without persistence mode);
// its CSV is ~80 bytes per GPU and rocm-smi's JSON a few kB per card.
constexpr std::chrono::milliseconds k_tool_timeout{10'000};
constexpr size_t k_tool_output_cap = 1u << 20;

std::string trim(std::string_view s) {
    const size_t a = s.find_first_not_of(" \t\r\n\"");
    if (a == std::string_view::npos) return "";
    const size_t b = s.find_last_not_of(" \t\r\n\"");
    return std::string(s.substr(a, b - a + 1));
}

// Split one CSV line on commas outside double quotes.
std::vector<std::string> csv_fields(std::string_view line) {
    std::vector<std::string> out(1);
    bool quoted = false;
    for (char c : line) {
        if (c == '"') quoted = !quoted;
        if (c == ',' && !quoted) out.emplace_back();
        else out.back() += c;
    }
    for (auto & f : out) f = trim(f);
    return out;
}

// Digits only: strtoull would take "-1" as 2^64 - 1 and " 12" with a space.
uint64_t parse_u64(const std::string & text, const std::string & where) {
    uint64_t v = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
        throw error(fmt::format("{}: expected a whole number, got '{}'", where, text));
    }
    return v;
}

} // namespace

std::vector<detected_gpu> parse_nvidia_smi_csv(std::string_view text) {
    std::vector<detected_gpu> out;
    size_t line_no = 0, start = 0;
    while (start < text.size()) {
        const size_t end = std::min(text.find('\n', start), text.size());
        const std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++line_no;
        if (trim(line).empty()) continue;
        const std::string where = fmt::format("nvidia-smi: line {}", line_no);
        const auto f = csv_fields(line);
        if (f.size() != 3) throw error(fmt::format("{}: expected name, memory.total, memory.free; got {} fields", where, f.size()));
        const uint64_t total = parse_u64(f[1], where + ": memory.total"), free = parse_u64(f[2], where + ": memory.free");
        out.push_back(checked_gpu(where, f[0], total, free, 1u << 20, "MiB"));
        if (out.size() > max_detected_gpus) throw error(fmt::format("nvidia-smi: more than {} GPUs", max_detected_gpus));
    }
    return out;
}

std::vector<detected_gpu> parse_rocm_smi_json(std::string_view text) {
    const auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw error("rocm-smi: output is not a JSON object");
    std::vector<detected_gpu> out;
    for (const auto & item : j.items()) {
        const std::string card = item.key(); // named, not bound: clang 14 cannot capture structured bindings
        const auto & v = item.value();
        if (!v.is_object() || !v.contains("VRAM Total Memory (B)")) continue;
        auto number = [&](const char * key) -> uint64_t {
            if (!v.contains(key)) return 0;
            const auto & x = v[key];
            const std::string where = fmt::format("rocm-smi: {} '{}'", card, key);
            if (x.is_string()) return parse_u64(x.get<std::string>(), where);
            if (!x.is_number_unsigned()) throw error(fmt::format("{}: expected a whole number", where));
            return x.get<uint64_t>();
        };
        std::string name = v.value("Card Series", v.value("Card SKU", fmt::format("AMD GPU {}", card)));
        const uint64_t total = number("VRAM Total Memory (B)");
        const uint64_t used = number("VRAM Total Used Memory (B)");
        const std::string where = fmt::format("rocm-smi: {}", card);
        if (used > total) throw error(fmt::format("{}: memory used {} bytes exceeds memory.total {} bytes", where, used, total));
        out.push_back(checked_gpu(where, name, total, total - used, 1, "bytes"));
        if (out.size() > max_detected_gpus) throw error(fmt::format("rocm-smi: more than {} GPUs", max_detected_gpus));
    }
    return out;
}

gpu_detection detect_gpus() {
    gpu_detection d;
    if (detect_nvml(d)) return d;
    // The command-line tools in order; the first that answers with at least one GPU wins.
    struct tool {
        const char * name;
        std::vector<std::string> argv;
        std::vector<detected_gpu> (*parse)(std::string_view);
    };
    static const tool tools[] = {
        {"nvidia-smi", {"nvidia-smi", "--query-gpu=name,memory.total,memory.free", "--format=csv,noheader,nounits"},
         parse_nvidia_smi_csv},
        {"rocm-smi", {"rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"}, parse_rocm_smi_json},
    };
    const auto timeout = detail::tool_timeout(k_tool_timeout);
    for (const tool & t : tools) {
        const detail::tool_result r = detail::run_tool(t.argv, timeout, k_tool_output_cap);
        if (!r.ok()) {
            const std::string why = fmt::format("{}: {}", t.name, detail::describe_tool_failure(r, timeout, k_tool_output_cap));
            // A tool that is absent or exits with an error (no driver) is a note; one that hangs or floods is refused.
            const bool refused = r.outcome == detail::tool_outcome::timed_out || r.outcome == detail::tool_outcome::too_much_output;
            (refused ? d.refused : d.notes).push_back(why);
            continue;
        }
        try {
            d.gpus = t.parse(r.output);
            d.method = t.name;
            if (!d.gpus.empty()) return d;
        } catch (const error & e) {
            d.gpus.clear();
            d.refused.push_back(e.what());
        }
    }
    d.gpus.clear();
    d.method = "none";
    return d;
}

std::vector<device_spec> devices_from_detection(const gpu_detection & d) {
    std::vector<device_spec> out;
    for (const auto & g : d.gpus) {
        const gpu_info * known = find_gpu(g.name);
        // a name sold with several memory sizes ("NVIDIA GeForce RTX 3060"): the row whose driver total is the one
        // measured, MiB as nvidia-smi prints it
        for (const gpu_info * c : known ? std::vector<const gpu_info *>{} : gpu_choices(g.name)) {
            if (c->reported_bytes >> 20 == g.total_bytes >> 20) known = c;
        }
        // the vendor (llama.cpp's backend is inferred from it): the table's, else the tool's (NVML and nvidia-smi
        // see NVIDIA GPUs, rocm-smi AMD ones)
        const std::string vendor = known ? known->vendor : d.method == "rocm-smi" ? "AMD" : d.method == "none" ? "" : "NVIDIA";
        // the free memory measured; the tool's total is what SGLang's default fraction reads (nvidia-smi memory.total)
        device_spec dev{known ? known->name : g.name, g.free_bytes, known ? known->compute_capability : 0, vendor};
        dev.reported_bytes = g.total_bytes;
        out.push_back(std::move(dev));
    }
    return out;
}

std::string describe_detection(const gpu_detection & d) {
    if (d.gpus.empty()) {
        std::string why;
        for (const auto & n : d.notes) why += (why.empty() ? "" : "; ") + n;
        for (const auto & n : d.refused) why += (why.empty() ? "" : "; ") + n;
        return fmt::format("no GPU found ({}): planning for the CPU\n", why);
    }
    std::string out;
    const auto devices = devices_from_detection(d);
    for (size_t i = 0; i < d.gpus.size(); ++i) {
        const auto & g = d.gpus[i];
        out += fmt::format("GPU{}: {}{}, {} free of {}, via {}\n", i, g.name,
                           devices[i].name != g.name ? fmt::format(" ({})", devices[i].name) : "",
                           human_bytes(g.free_bytes), human_bytes(g.total_bytes), d.method);
    }
    return out;
}

} // namespace kvfit
