#pragma once
// One record as one line of JSON (the file sink's `format: json`): its key, value, headers
// and timestamp, whatever bytes they hold. A dead letter is the record that could not be
// handled, often bytes that are not text and values with newlines; with its headers it
// also carries why (exactly.error) and where from (exactly.origin).
#include <exactly/plugin_abi.h>

#include <string>

namespace exactly::file {

// Appends {"key":..,"value":..,"headers":[[name,value],..],"timestamp":..} and no newline.
// Bytes that are valid UTF-8 are a JSON string; others {"base64":"..."}; an absent key
// or value (no data) null. Control characters are escaped: the line holds no newline.
void append_json_record(std::string& out, const ex_record& r);

}  // namespace exactly::file
