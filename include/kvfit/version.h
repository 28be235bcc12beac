#pragma once
/// @file version.h
/// kvfit's version, from project(kvfit VERSION ...) in CMakeLists.txt (CMakeLists.txt checks that they agree).

#define KVFIT_VERSION_MAJOR 0
#define KVFIT_VERSION_MINOR 1
#define KVFIT_VERSION_PATCH 0
#define KVFIT_VERSION_STRING "0.1.0"

namespace kvfit {
/// "0.1.0"
inline constexpr const char * version = KVFIT_VERSION_STRING;
} // namespace kvfit
