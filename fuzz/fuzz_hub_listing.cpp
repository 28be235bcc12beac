// libFuzzer target: kvfit::fuzz::read_hub_listing (fuzz/fuzz_targets.h). Run with fuzz/run.sh.
#include "fuzz_targets.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    kvfit::fuzz::read_hub_listing(std::string_view(reinterpret_cast<const char *>(data), size));
    return 0;
}
