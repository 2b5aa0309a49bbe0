#include <exactly/sdk.hpp>

#include "file_sink.hpp"
#include "file_source.hpp"

namespace {

using exactly::sdk::exclusive_path;
using exactly::sdk::field;
using exactly::sdk::required;

const ex_config_field kSourceFields[] = {
    required("path", EX_CFG_STRING, "JSON-lines file to read; one record per line"),
    field("follow", EX_CFG_BOOL, "keep polling for appended lines instead of ending at EOF",
          "false"),
    field("batch.size", EX_CFG_INT, "lines per poll at most", "1024"),
    field("max.line.bytes", EX_CFG_SIZE,
          "longest line accepted; a longer one stops the pipeline with its byte offset "
          "(instead of the host holding ever more of it in memory); 64 MiB",
          "67108864"),
    exclusive_path(field("offsets.path", EX_CFG_STRING,
                         "where commit() keeps the position when the sink does not store it; empty = "
                         "restart from the beginning. One source per file: a second one (another "
                         "pipeline or process) is refused while <offsets.path>.lock is held",
                         "")),
};

const char* const kFormats[] = {"value", "json", nullptr};

const ex_config_field kSinkFields[] = {
    exclusive_path(required("path", EX_CFG_STRING, "file to write, one line per record")),
    field("fsync", EX_CFG_BOOL, "fsync output and commit record at every commit", "true"),
    field("format", EX_CFG_STRING,
          "value = the record's value as the line (a value with a newline is refused); json = "
          "the whole record as a line of JSON: key, value, headers, timestamp, any bytes (not "
          "UTF-8: {\"base64\": ...}); the one for dead letters, whose headers say why",
          "value", kFormats),
};

}  // namespace

EXACTLY_PLUGIN("file", "0.1.0",
               exactly::sdk::source<exactly::file::FileSource>(
                   "file", "Reads a JSON-lines file, one record per line", kSourceFields),
               exactly::sdk::sink<exactly::file::FileSink>(
                   "file", "Writes one line per record; commits atomically with positions",
                   kSinkFields))
