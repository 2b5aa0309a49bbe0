// Small POSIX helpers shared by the file source and sink. Errors come back as Status
// with errno text, never as exceptions.
#pragma once

#include <exactly/sdk.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace exactly::file {

std::string errno_text(const std::string& what, const std::string& path);
std::string dir_of(const std::string& path);
std::string base_name(const std::string& path);

sdk::Status write_all(int fd, const char* data, size_t len, const std::string& path);
// The whole file, or nullopt when it does not exist.
sdk::Status read_whole(const std::string& path, std::optional<std::string>& out);
// Replacing a file atomically: sdk::replace_file_atomically (exactly/durable_file.hpp).

// Opens `path` (creating it) with an exclusive flock, held as long as the descriptor is
// open: a holder that dies, or is rebuilt, lets go. Another holder is the config error
// `in_use` on `key`; other failures name the file.
// "" for a regular file; else what it is ("a FIFO", "a character device", ...).
std::string not_regular(int fd);
sdk::Status open_exclusive(const std::string& path, const std::string& key, const std::string& in_use,
                           int& out);

}  // namespace exactly::file
