#pragma once
// File helpers for tests: whole-file reads of repo fixtures and of ../shared.
#include <string>

namespace kvfit::test {

/// The bytes of the file at `path`; fails the current test (and returns "") when it cannot be opened.
std::string read_text(const std::string & path);

/// The text of ../shared/configs/<file> (KVFIT_SHARED_DIR).
std::string shared_config(const std::string & file);

} // namespace kvfit::test
