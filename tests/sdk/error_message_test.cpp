// A plugin's error crosses the C ABI in a fixed array (EX_ERROR_MESSAGE_MAX). A longer
// message keeps its start and its end, so that a hint appended after a long library
// text reaches the operator; a cut never leaves half a UTF-8 character.
#include <gtest/gtest.h>

#include <exactly/sdk.hpp>

#include <stdexcept>
#include <string>

namespace {

namespace sd = exactly::sdk;

std::string through_guard(const std::string& message) {
  ex_error err{};
  err.struct_size = sizeof(err);
  const int32_t code = sd::detail::guard(&err, [&]() -> sd::Status { return sd::Status::fatal(message); });
  EXPECT_EQ(code, EX_ERR_FATAL);
  return std::string(err.message);
}

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

TEST(SdkErrorMessage, AShortMessageCrossesWhole) {
  EXPECT_EQ(through_guard("sink: broker away"), "sink: broker away");
  const std::string exact(EX_ERROR_MESSAGE_MAX - 1, 'x');
  EXPECT_EQ(through_guard(exact), exact);
}

TEST(SdkErrorMessage, ALongMessageKeepsItsStartAndItsHint) {
  const std::string head = "sink: commit failed: ";
  const std::string hint = ". Delete the id file /var/lib/exactly/x.instance-id so that it takes a new id";
  const std::string msg = through_guard(head + std::string(3000, 'p') + hint);
  EXPECT_LE(msg.size(), static_cast<size_t>(EX_ERROR_MESSAGE_MAX - 1));
  EXPECT_GE(msg.size(), static_cast<size_t>(EX_ERROR_MESSAGE_MAX - 8));  // the room is used
  EXPECT_EQ(msg.rfind(head, 0), 0u) << msg;
  ASSERT_GE(msg.size(), hint.size());
  EXPECT_EQ(msg.substr(msg.size() - hint.size()), hint) << msg;
  EXPECT_NE(msg.find(" ... "), std::string::npos) << msg;
}

TEST(SdkErrorMessage, ACutNeverSplitsAUtf8Character) {
  // "é" is two bytes and "€" three: whatever the offsets, both cuts land between characters.
  for (const std::string unit : {"é", "€", "a€é"}) {
    for (size_t pad = 0; pad < 4; ++pad) {
      std::string s(pad, 'a');
      while (s.size() < 3 * EX_ERROR_MESSAGE_MAX) s += unit;
      const std::string msg = through_guard(s);
      EXPECT_LE(msg.size(), static_cast<size_t>(EX_ERROR_MESSAGE_MAX - 1));
      EXPECT_TRUE(valid_utf8(msg)) << "unit " << unit << " pad " << pad;
    }
  }
}

TEST(SdkErrorMessage, AThrownExceptionIsCutTheSameWay) {
  ex_error err{};
  err.struct_size = sizeof(err);
  const std::string hint = "; set rdkafka.queued.min.messages lower";
  sd::detail::guard(&err, [&]() -> sd::Status { throw std::runtime_error(std::string(2000, 'q') + hint); });
  const std::string msg(err.message);
  EXPECT_EQ(msg.substr(msg.size() - hint.size()), hint) << msg;
  EXPECT_EQ(msg.rfind("unhandled exception: ", 0), 0u) << msg;
}

}  // namespace
