#include <catch2/catch.hpp>

#include <random>

#include "stream/frame.hpp"

using namespace csrun::stream;

namespace {

std::vector<Message> one_of_each() {
  static const std::vector<std::byte> payload(40, std::byte{7});
  std::vector<Message> messages;
  for (int type = 1; type <= static_cast<int>(MessageType::bye); ++type) {
    Message message = make_message(static_cast<MessageType>(type));
    message.text = "secret text";
    message.rank = 3;
    message.pid = 4242;
    message.ticket = 99;
    message.stream = 1;
    message.epoch = 2;
    message.sample = 640;
    message.values = {5, 1, 4};
    message.memfd = 12;
    message.nonce = 0x0123456789abcdefu;
    message.slot = 6;
    message.payload = payload;
    messages.push_back(message);
  }
  return messages;
}

}  // namespace

TEST_CASE("every message survives encoding and decoding") {
  for (const Message& message : one_of_each()) {
    INFO(message_type_name(message.type));
    std::vector<std::byte> frame = encode(message);
    REQUIRE(frame.size() == frame_size(message));
    Message back = decode(frame);
    CHECK(back.type == message.type);
    CHECK(encode(back) == frame);
  }
  Message batch = decode(encode(one_of_each()[static_cast<int>(MessageType::batch) - 1]));
  CHECK(batch.ticket == 99);
  CHECK(batch.values == std::vector<std::int64_t>{5, 1, 4});
  CHECK(batch.slot == 6);
  CHECK(batch.payload.size() == 40);
  Message ready = decode(encode(one_of_each()[static_cast<int>(MessageType::ready) - 1]));
  CHECK(ready.memfd == 12);
  CHECK(ready.nonce == 0x0123456789abcdefu);
  CHECK(decode(encode(one_of_each()[static_cast<int>(MessageType::request) - 1])).slot == 6);
}

TEST_CASE("frames that are not messages are FrameErrors that say why") {
  std::vector<std::byte> frame = encode(make_message(MessageType::heartbeat));
  auto broken = frame;
  broken[0] = std::byte{'X'};
  CHECK_THROWS_WITH(decode(broken), Catch::Contains("no CSRS magic"));
  broken = frame;
  broken[4] = std::byte{9};
  CHECK_THROWS_WITH(decode(broken), Catch::Contains("protocol version 9"));
  broken = frame;
  broken[5] = std::byte{200};
  CHECK_THROWS_WITH(decode(broken), Catch::Contains("unknown message type 200"));
  broken = frame;
  broken.push_back(std::byte{0});
  CHECK_THROWS_WITH(decode(broken), Catch::Contains("trailing bytes"));
  Message hello = make_message(MessageType::hello);
  hello.text = "abc";
  broken = encode(hello);
  broken[8] = std::byte{0xff};  // the text's length, low byte
  CHECK_THROWS_WITH(decode(broken), Catch::Contains("the frame ends inside its text"));
  broken[15] = std::byte{0xff};  // high byte
  CHECK_THROWS_WITH(decode(broken), Catch::Contains("more than the limit"));
  CHECK_THROWS_AS(decode(std::span<const std::byte>()), FrameError);
}

// The decoder faces whatever arrives on the coordinator's socket: mutated and random frames must
// decode or be FrameErrors, never crash or read out of bounds.
TEST_CASE("fuzz: mutated and random frames never get past the decoder unchecked") {
  std::mt19937_64 random(20261122);
  std::vector<std::vector<std::byte>> seeds;
  for (const Message& message : one_of_each())
    seeds.push_back(encode(message));
  std::size_t decoded = 0, rejected = 0;
  for (int round = 0; round < 200000; ++round) {
    std::vector<std::byte> frame = seeds[random() % seeds.size()];
    switch (random() % 4) {
      case 0:  // flip bytes
        for (int flips = 1 + static_cast<int>(random() % 4); flips > 0; --flips)
          frame[random() % frame.size()] = static_cast<std::byte>(random());
        break;
      case 1:  // truncate
        frame.resize(random() % frame.size());
        break;
      case 2:  // extend
        for (int extra = 1 + static_cast<int>(random() % 16); extra > 0; --extra)
          frame.push_back(static_cast<std::byte>(random()));
        break;
      default:  // random bytes behind a valid header
        frame.resize(8 + random() % 64);
        for (std::size_t i = 8; i < frame.size(); ++i)
          frame[i] = static_cast<std::byte>(random());
    }
    try {
      Message message = decode(frame);
      CHECK(frame_size(message) == frame.size());
      ++decoded;
    } catch (const FrameError&) {
      ++rejected;
    }
  }
  CHECK(decoded > 0);
  CHECK(rejected > 0);
}
