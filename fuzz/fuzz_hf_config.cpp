// libFuzzer target: kvfit::fuzz::read_hf_config (fuzz/fuzz_targets.h). Run with fuzz/run.sh.
#include "fuzz_targets.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    kvfit::fuzz::read_hf_config(std::string_view(reinterpret_cast<const char *>(data), size));
    return 0;
}
