#include "kvfit/error.h"

#include <fmt/format.h>

namespace kvfit {

error error::missing_key(std::string_view where, std::string_view key) {
    return error(fmt::format("{}: missing required key '{}'", where, key));
}

error error::bad_key(std::string_view where, std::string_view key, std::string_view what) {
    return error(fmt::format("{}: key '{}': {}", where, key, what));
}

error error::at_offset(std::string_view where, uint64_t offset, std::string_view what) {
    return error(fmt::format("{}: offset 0x{:x}: {}", where, offset, what));
}

error error::at(std::string_view where, std::string_view what) {
    return error(fmt::format("{}: {}", where, what));
}

} // namespace kvfit
