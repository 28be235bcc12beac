// libFuzzer target: any bytes through the GGUF reader, the value accessors and the model mapping.
// Every input must either parse or end in kvfit::error; anything else (a crash, a sanitizer report, another
// exception type, a huge allocation) is a finding. Run with fuzz/run.sh.
#include "kvfit/error.h"
#include "kvfit/gguf.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char *>(data), size);
    try {
        const kvfit::gguf_file f = kvfit::gguf_file::parse(bytes, "fuzz.gguf");
        for (const auto & kv : f.kvs()) { // walk every value, including nested arrays
            const auto & v = kv.value;
            (void)v.to_int(); (void)v.to_uint(); (void)v.to_float(); (void)v.to_string();
            if (v.is_array() && v.n > 0) {
                const auto last = v.at(v.n - 1);
                if (last.is_array() && last.n > 0) (void)last.at(last.n - 1).to_uint();
            }
        }
        kvfit::warnings warn;
        const std::vector<kvfit::gguf_file> shards{f};
        (void)kvfit::gguf_inspect(shards, warn);
    } catch (const kvfit::error &) {
    }
    return 0;
}
