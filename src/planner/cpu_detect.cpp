// This machine's CPU features for llama.cpp's CPU backend (include/kvfit/llamacpp_cpu.h: detect_host_cpu).
#include "kvfit/llamacpp_cpu.h"

#include <fstream>
#include <string>

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace kvfit {

cpu_features detect_host_cpu() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (in && std::getline(in, line)) {
        if (line.rfind("flags", 0) != 0) continue;
        const size_t colon = line.find(':');
        if (colon == std::string::npos) break;
        bool granted = false;
#if defined(__linux__) && defined(__x86_64__)
        // ggml-cpu/amx/amx.cpp ggml_amx_init: ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18)
        granted = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#endif
        return cpu_features_from_flags(std::string_view(line).substr(colon + 1), granted);
    }
    cpu_features c;
    c.source = "assumed (no /proc/cpuinfo flags line)";
    return c;
}

} // namespace kvfit
