// The files a librdkafka client reads at its creation (CA, certificate, key, keystore,
// CRL, keytab). librdkafka names none of them when one is missing ("ssl.ca.location
// failed: error:05880002:x509 certificate routines::system lib") and blocks for ever on
// one that is a FIFO (QA: the pipeline hung after "started"). Checked when the settings
// are parsed, so that `exactly validate` and a reload reject them too.
#pragma once

#include <map>
#include <string>

namespace exactly::kafka {

// Throws sdk::ConfigError("rdkafka.<key>", ...) naming the path and the system's reason
// for a file setting in `user` that cannot be read as a file (ssl.ca.location may also be
// a directory, or "probe").
void check_client_files(const std::map<std::string, std::string>& user);

}  // namespace exactly::kafka
