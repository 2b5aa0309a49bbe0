// What the host checks before it runs any code from a shared library: the library must
// export the plugin entry point (read from its ELF dynamic symbol table, without
// loading it: loading runs its constructors), and neither it nor its directory may be
// writable by others (anyone who can write there could plant code the host runs),
// unless the configuration says `plugin.insecure: true`.
#pragma once

#include <string>

namespace exactly::plugin {

// True when the ELF file at `path` exports `symbol` (a defined dynamic symbol).
// `why` says what is wrong when the file cannot be read as ELF.
bool exports_symbol(const std::string& path, const std::string& symbol, std::string* why);

// "" when `path` (a plugin directory or file) may be trusted; else the reason and the fix.
std::string untrusted_reason(const std::string& path, bool is_dir);

}  // namespace exactly::plugin
