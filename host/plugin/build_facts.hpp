#pragma once
// ABI 1.4 build facts (pointer size, byte order, sizes of the structs passed in arrays):
// what a plugin's descriptor states about its build must be this host's, or every record
// would be misread. Checked once per library at load, like PostgreSQL's magic block.
#include <exactly/plugin_abi.h>

#include <string>

namespace exactly::plugin {

// Why the descriptor's build facts refuse its library, or "" when they agree or the
// descriptor predates them (built for 1.3 or older). The loader's failure record puts the
// library's path in front (`FAILED /path/x.so: built with ...`).
std::string build_fact_mismatch(const ex_plugin_descriptor& d);

}  // namespace exactly::plugin
