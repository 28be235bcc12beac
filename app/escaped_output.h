#pragma once
// Every byte kvfit prints goes through kvfit::printable (include/kvfit/printable.h): a GGUF name, a config value,
// a log line or a file name holding terminal escapes reaches the terminal spelled out ("\x1b[2J"), in reports,
// --inspect, warnings and errors alike. JSON is unchanged (its strings never hold raw control characters).

namespace kvfit::cli {

/// Replace stdout and stderr with streams that escape what is written to them, then write to file descriptors
/// 1 and 2 (glibc's stdout and stderr are assignable variables; fmt::print and CLI11's output use them).
/// stdout keeps its buffering (line-buffered on a terminal), stderr stays unbuffered. Call once, first in main.
void escape_standard_streams();

} // namespace kvfit::cli
