#include "core/embedded.h"

namespace kvfit::detail {

std::string_view embedded(std::string_view path) {
    for (const auto & f : embedded_files()) {
        if (f.path == path) return f.bytes;
    }
    return {};
}

} // namespace kvfit::detail
