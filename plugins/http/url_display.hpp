// A request URL as it may appear in logs, dead-letter headers and the summary: the
// password of its userinfo and the values of query parameters named like credentials
// (api_key, token, secret, password, signature, ...) become "***". The request itself
// still goes out with them; only what people read loses them.
#pragma once

#include <string>

namespace exactly::http {

std::string display_url(const std::string& url);

}  // namespace exactly::http
