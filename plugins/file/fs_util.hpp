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

}  // namespace exactly::file
