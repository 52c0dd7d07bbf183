#include "frame.hpp"

#include <cstring>

namespace csrun::stream {

namespace {

// Frame: magic "CSRS", version, type, two zero bytes, then the type's fields in a fixed order.
// Integers are little-endian (as every host csrun runs on); strings, value lists and the
// payload carry their length first.
constexpr std::uint8_t kMagic[4] = {'C', 'S', 'R', 'S'};
constexpr std::uint8_t kVersion = 2;
constexpr std::size_t kHeader = 8;
constexpr std::uint64_t kMaxText = 1u << 20;
constexpr std::uint64_t kMaxValues = 1u << 24;

struct Layout {
  bool text = false, rank = false, pid = false, ticket = false, position = false, slot = false,
       values = false, shared = false, payload = false;
};

Layout layout(MessageType type) {
  switch (type) {
    case MessageType::hello:
      return {.text = true, .rank = true, .pid = true};
    case MessageType::welcome:
      return {.text = true, .rank = true};
    case MessageType::reject:
      return {.text = true};
    case MessageType::ready:
      return {.values = true, .shared = true};
    case MessageType::request:
      return {.ticket = true, .position = true, .slot = true};
    case MessageType::batch:
      return {.ticket = true, .slot = true, .values = true, .payload = true};
    case MessageType::failure:
      return {.text = true, .ticket = true};
    case MessageType::heartbeat:
      return {};
    case MessageType::bye:
      return {.rank = true};
  }
  throw FrameError("unknown message type " + std::to_string(static_cast<int>(type)));
}

class Writer {
 public:
  explicit Writer(std::span<std::byte> out) : out_(out) {}
  void bytes(const void* data, std::size_t size) {
    if (size && data) std::memcpy(out_.data() + at_, data, size);
    at_ += size;
  }
  template <typename T>
  void number(T value) {
    bytes(&value, sizeof value);
  }

 private:
  std::span<std::byte> out_;
  std::size_t at_ = 0;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  std::span<const std::byte> bytes(std::uint64_t size, const char* what) {
    if (size > in_.size() - at_) {
      throw FrameError(std::string("the frame ends inside its ") + what + " (" +
                       std::to_string(in_.size()) + " bytes)");
    }
    auto view = in_.subspan(at_, size);
    at_ += size;
    return view;
  }
  template <typename T>
  T number(const char* what) {
    T value;
    std::memcpy(&value, bytes(sizeof value, what).data(), sizeof value);
    return value;
  }
  std::uint64_t length(std::uint64_t limit, const char* what) {
    auto value = number<std::uint64_t>(what);
    if (value > limit) {
      throw FrameError(std::string("its ") + what + " claims " + std::to_string(value) +
                       ", more than the limit of " + std::to_string(limit));
    }
    return value;
  }
  bool done() const { return at_ == in_.size(); }

 private:
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

}  // namespace

const char* message_type_name(MessageType type) {
  switch (type) {
    case MessageType::hello:
      return "hello";
    case MessageType::welcome:
      return "welcome";
    case MessageType::reject:
      return "reject";
    case MessageType::ready:
      return "ready";
    case MessageType::request:
      return "request";
    case MessageType::batch:
      return "batch";
    case MessageType::failure:
      return "failure";
    case MessageType::heartbeat:
      return "heartbeat";
    case MessageType::bye:
      return "bye";
  }
  return "unknown";
}

std::size_t frame_size(const Message& message) {
  Layout fields = layout(message.type);
  std::size_t size = kHeader;
  if (fields.text) size += 8 + message.text.size();
  if (fields.rank) size += 8;
  if (fields.pid) size += 8;
  if (fields.ticket) size += 8;
  if (fields.position) size += 4 + 8 + 8;
  if (fields.slot) size += 8;
  if (fields.values) size += 8 + 8 * message.values.size();
  if (fields.shared) size += 8 + 8;
  if (fields.payload) size += 8 + message.payload.size();
  return size;
}

std::size_t payload_offset(const Message& message) {
  return frame_size(message) - message.payload.size();
}

void encode(const Message& message, std::span<std::byte> out) {
  Layout fields = layout(message.type);
  Writer writer(out);
  writer.bytes(kMagic, sizeof kMagic);
  writer.number(kVersion);
  writer.number(static_cast<std::uint8_t>(message.type));
  writer.number(std::uint16_t{0});
  if (fields.text) {
    writer.number(static_cast<std::uint64_t>(message.text.size()));
    writer.bytes(message.text.data(), message.text.size());
  }
  if (fields.rank) writer.number(message.rank);
  if (fields.pid) writer.number(message.pid);
  if (fields.ticket) writer.number(message.ticket);
  if (fields.position) {
    writer.number(message.stream);
    writer.number(message.epoch);
    writer.number(message.sample);
  }
  if (fields.slot) writer.number(message.slot);
  if (fields.values) {
    writer.number(static_cast<std::uint64_t>(message.values.size()));
    writer.bytes(message.values.data(), 8 * message.values.size());
  }
  if (fields.shared) {
    writer.number(message.memfd);
    writer.number(message.nonce);
  }
  if (fields.payload) {
    writer.number(static_cast<std::uint64_t>(message.payload.size()));
    writer.bytes(message.payload.data(), message.payload.size());
  }
}

std::vector<std::byte> encode(const Message& message) {
  std::vector<std::byte> out(frame_size(message));
  encode(message, out);
  return out;
}

Message decode(std::span<const std::byte> frame) {
  Reader reader(frame);
  auto magic = reader.bytes(4, "header");
  if (std::memcmp(magic.data(), kMagic, sizeof kMagic) != 0)
    throw FrameError("not a csrun stream frame (no CSRS magic)");
  auto version = reader.number<std::uint8_t>("header");
  if (version != kVersion) {
    throw FrameError("protocol version " + std::to_string(version) + "; this csrun speaks " +
                     std::to_string(kVersion));
  }
  Message message;
  message.type = static_cast<MessageType>(reader.number<std::uint8_t>("header"));
  Layout fields = layout(message.type);
  if (reader.number<std::uint16_t>("header") != 0) throw FrameError("reserved header bytes set");
  if (fields.text) {
    auto text = reader.bytes(reader.length(kMaxText, "text length"), "text");
    message.text.assign(reinterpret_cast<const char*>(text.data()), text.size());
  }
  if (fields.rank) message.rank = reader.number<std::int64_t>("rank");
  if (fields.pid) message.pid = reader.number<std::int64_t>("pid");
  if (fields.ticket) message.ticket = reader.number<std::uint64_t>("ticket");
  if (fields.position) {
    message.stream = reader.number<std::uint32_t>("stream");
    message.epoch = reader.number<std::int64_t>("epoch");
    message.sample = reader.number<std::int64_t>("sample");
  }
  if (fields.slot) message.slot = reader.number<std::int64_t>("slot");
  if (fields.values) {
    auto count = reader.length(kMaxValues, "value count");
    auto values = reader.bytes(8 * count, "values");
    message.values.resize(count);
    if (count) std::memcpy(message.values.data(), values.data(), values.size());
  }
  if (fields.shared) {
    message.memfd = reader.number<std::int64_t>("memfd");
    message.nonce = reader.number<std::uint64_t>("nonce");
  }
  if (fields.payload)
    message.payload = reader.bytes(reader.length(frame.size(), "payload length"), "payload");
  if (!reader.done())
    throw FrameError("trailing bytes after the " + std::string(message_type_name(message.type)) +
                     " message");
  return message;
}

}  // namespace csrun::stream
