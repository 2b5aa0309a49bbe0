// id.json's fast path (plugins/dedupe/json_id_scan.hpp): what it answers, what it leaves
// to simdjson, and, over thousands of well-formed and broken documents, that the
// extractor with it says exactly what the extractor without it says.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "id_extractor.hpp"
#include "json_id_scan.hpp"

namespace {

using exactly::dedupe::IdExtractor;
using exactly::dedupe::IdSource;
using exactly::dedupe::IdSpec;
using exactly::dedupe::scan_string_field;
using exactly::dedupe::single_field_of;

TEST(JsonIdScan, APointerToOneTopLevelMemberNamesIt) {
  EXPECT_EQ(single_field_of("/id"), "id");
  EXPECT_EQ(single_field_of("/a~1b~0c"), "a/b~c");
  EXPECT_EQ(single_field_of("/"), "");
  EXPECT_FALSE(single_field_of("/meta/id"));
  EXPECT_FALSE(single_field_of(""));
  EXPECT_FALSE(single_field_of("id"));
  EXPECT_FALSE(single_field_of("/x~2"));
  EXPECT_FALSE(single_field_of("/x~"));
}

TEST(JsonIdScan, AnswersAPlainStringMemberOfAPlainObject) {
  EXPECT_EQ(scan_string_field(R"({"id":"abc"})", "id"), "abc");
  EXPECT_EQ(scan_string_field(" \n{ \"id\" :\t\"abc\" }\r\n", "id"), "abc");
  EXPECT_EQ(scan_string_field(R"({"a":1,"b":[true,false,null,{"c":"d\"e"}],"id":"x","z":-1.5e3})", "id"), "x");
  EXPECT_EQ(scan_string_field(R"({"id":"first","id":"second"})", "id"), "first");
  EXPECT_EQ(scan_string_field(R"({"meta":{"id":"inner"},"id":"outer"})", "id"), "outer");
  EXPECT_EQ(scan_string_field(R"({"id":""})", "id"), "");
  EXPECT_EQ(scan_string_field("{\"id\":\"h\xc3\xa9\"}", "id"), "h\xc3\xa9");
}

TEST(JsonIdScan, LeavesEverythingElseToSimdjson) {
  for (const char* doc : {
           R"({"id":"a\"b"})",          // an escape in the value
           R"({"i\u0064":"a"})",        // an escape in a key
           R"({"id":12345})",           // a number
           R"({"id":null})",            // null
           R"({"id":{"a":1}})",         // an object
           R"({"other":"a"})",          // missing
           R"({})",                     // empty
           R"({"id":"a")",              // unclosed
           R"({"id":"a"} x)",           // text after it
           R"({"id":"a",})",            // a trailing comma
           R"({"b":[1,],"id":"a"})",    // a trailing comma inside
           R"({"b":,"id":"a"})",        // a missing value
           R"({"b" 1,"id":"a"})",       // a missing colon
           R"(["id","a"])",             // an array
           "{\"id\":\"a\x01\"}",        // a control character in a string
           "{\"id\":\"a\",\"b\":\"\xff\"}",  // invalid UTF-8 after the id
           "\xef\xbb\xbf{\"id\":\"a\"}",     // a byte order mark
           "hello, not json",
           "",
       })
    EXPECT_FALSE(scan_string_field(doc, "id")) << doc;
  std::string deep = "{\"d\":";
  for (int i = 0; i < 70; ++i) deep += "[";
  for (int i = 0; i < 70; ++i) deep += "]";
  deep += ",\"id\":\"a\"}";
  EXPECT_FALSE(scan_string_field(deep, "id"));
}

struct Answer {
  bool ok;
  std::string key;
  std::string reason;
  bool operator==(const Answer& o) const { return ok == o.ok && key == o.key && reason == o.reason; }
};

Answer extract(IdExtractor& x, const std::string& doc) {
  ex_record r{};
  r.value = {reinterpret_cast<const uint8_t*>(doc.data()), doc.size()};
  r.timestamp_ms = -1;
  Answer a;
  a.ok = x.extract(r, a.key, a.reason);
  return a;
}

// Every document below, and every document one edit away from it (cut short, one byte
// replaced by a byte that matters to JSON, one such byte inserted), gets the same answer
// with the fast path as without it.
TEST(JsonIdScan, TheExtractorSaysWithItWhatItSaysWithoutIt) {
  const std::vector<std::string> seeds = {
      R"({"id":"6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b","amount":12.5,"tags":["a","b"],"user":{"name":"x"}})",
      R"({"seq":1,"id":"plain-id","ok":true,"none":null,"esc":"q\"uote"})",
      R"( { "id" : "spaced" , "n" : -0.5e-3 } )",
      R"({"nested":{"id":"no"},"list":[{"id":"no"}],"id":"yes"})",
      R"({"id":42})",
      R"({"a":"\\","id":"after-backslash"})",
      // escapes, quotes and multi-byte characters more than 16 bytes into long strings
      R"({"note":"a long text with an \"escaped\" quote in it","id":"abcdefghijklmnopqrstuvwx\"yz"})",
      "{\"name\":\"J\xc3\xbcrgen M\xc3\xbcller-L\xc3\xbc" "denscheid\",\"id\":\"0123456789abcdef\xe2\x82\xac\"}",
  };
  const std::string specials = std::string("\"\\{}[],: a0\x01\xff\xc3", 14);
  std::vector<std::string> docs;
  for (const auto& s : seeds) {
    docs.push_back(s);
    for (size_t i = 0; i < s.size(); ++i) {
      docs.push_back(s.substr(0, i));
      for (char c : specials) {
        std::string replaced = s;
        replaced[i] = c;
        docs.push_back(replaced);
        docs.push_back(s.substr(0, i) + c + s.substr(i));
      }
    }
  }
  IdSpec fast{IdSource::json, "", "/id", 128, true};
  IdSpec slow{IdSource::json, "", "/id", 128, false};
  IdExtractor with(fast), without(slow);
  size_t answered = 0, kept = 0;
  for (const auto& d : docs) {
    if (d.empty()) continue;  // refused before either path, as the extractor does
    if (scan_string_field(d, "id")) ++answered;
    const Answer a = extract(with, d), b = extract(without, d);
    EXPECT_EQ(a, b) << "document: " << d << "\nwith: " << a.ok << " " << a.reason
                    << "\nwithout: " << b.ok << " " << b.reason;
    kept += b.ok;
  }
  // Both kinds of document are there: many the fast path answers, many it does not.
  EXPECT_GT(answered, 1000u);
  EXPECT_GT(docs.size() - answered, 1000u);
  EXPECT_GT(kept, answered);  // ids the fast path leaves to simdjson (numbers, escapes) too
}

}  // namespace
