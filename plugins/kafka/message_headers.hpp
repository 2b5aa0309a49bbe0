// A consumed message's header list without librdkafka's per-message allocation when it
// has none.
//
// librdkafka 2.0.2's rd_kafka_message_headers() parses the record's header bytes on
// first use through a shadow buffer it allocates (calloc) and frees again, also when the
// record has zero headers: that was 13% of the pipeline thread in a 10M-record run of
// kafka -> dedupe -> kafka whose input has no headers (docs/benchmarks.md, "Records
// without headers"). In a v2 record (the only format that has headers) the header count
// (a zigzag varint, a single 0x00 byte for zero) directly follows the value, and
// librdkafka hands the value out in place, inside the fetched (or decompressed) batch
// buffer. So a 0x00 after the value means "no headers" and nothing else need be asked;
// any other byte, or no value to look behind, goes to librdkafka as before: a tombstone
// has no payload, and an empty value's payload is a static "" of librdkafka's, not a
// place in the batch (its headers were lost when this looked behind it; the test
// KafkaSourceMock.RecordsArriveWithTheirHeadersOrNoneAsWritten has such records).
// For records of the pre-0.11 formats (no headers) the byte read belongs to the next
// message or to the end of the same buffer; whatever it holds, the answer stays "no
// headers" (0x00) or librdkafka's own (non-zero).
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>

namespace exactly::kafka {

inline rd_kafka_headers_t* headers_of(const rd_kafka_message_t* m) {
  if (m->payload != nullptr && m->len > 0 && static_cast<const uint8_t*>(m->payload)[m->len] == 0)
    return nullptr;
  rd_kafka_headers_t* h = nullptr;
  if (rd_kafka_message_headers(m, &h) != RD_KAFKA_RESP_ERR_NO_ERROR) return nullptr;
  return h;
}

}  // namespace exactly::kafka
