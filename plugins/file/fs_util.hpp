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
// Replaces `path` with `content` so that a crash leaves either the old or the new file:
// write a temp file, fsync it, rename over, fsync the directory (fsyncs only if `sync`).
sdk::Status replace_atomically(const std::string& path, std::string_view content, bool sync);

}  // namespace exactly::file
