#pragma once

#include <cstddef>
#include <string>

namespace exactly::config {

// Reads up to `max` + 1 bytes of the regular file at `path` into `out` (one byte more
// than allowed is enough to say it is too big). False with `why` set when it cannot:
// the OS's reason (no such file, permission denied, a dangling symlink), or that the
// path is a directory, a FIFO, a socket or a device. A FIFO used to block the host (and
// `validate`) until something wrote to it, deaf to SIGTERM: it is refused without
// waiting for a writer.
bool read_regular_file(const std::string& path, size_t max, std::string& out, std::string& why);

}  // namespace exactly::config
