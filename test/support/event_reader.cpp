#include "event_reader.hpp"

#include <bit>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>

namespace csrun::test {

namespace {

// A protocol buffer message's fields, read one by one.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}

  bool done() const { return at_ >= bytes_.size(); }

  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (done()) throw std::runtime_error("event record: truncated varint");
      auto byte = static_cast<std::uint8_t>(bytes_[at_++]);
      value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return value;
    }
    throw std::runtime_error("event record: varint too long");
  }

  std::string_view take(std::size_t count) {
    if (at_ + count > bytes_.size()) throw std::runtime_error("event record: truncated field");
    std::string_view part = bytes_.substr(at_, count);
    at_ += count;
    return part;
  }

  std::uint64_t fixed(int count) {
    std::string_view part = take(static_cast<std::size_t>(count));
    std::uint64_t value = 0;
    for (int i = count - 1; i >= 0; --i)
      value = value << 8 | static_cast<std::uint8_t>(part[static_cast<std::size_t>(i)]);
    return value;
  }

  // The next field: its number and wire type; the value is read by the caller.
  std::pair<int, int> field() {
    std::uint64_t key = varint();
    return {static_cast<int>(key >> 3), static_cast<int>(key & 7)};
  }

  void skip(int wire_type) {
    if (wire_type == 0) varint();
    if (wire_type == 1) take(8);
    if (wire_type == 2) take(varint());
    if (wire_type == 5) take(4);
  }

 private:
  std::string_view bytes_;
  std::size_t at_ = 0;
};

// Value { string tag = 1; float simple_value = 2 }
ScalarEvent read_value(std::string_view bytes, std::int64_t step) {
  ScalarEvent event{{}, step, 0.0f};
  WireReader reader(bytes);
  while (!reader.done()) {
    auto [number, type] = reader.field();
    if (number == 1 && type == 2) {
      std::string_view tag = reader.take(reader.varint());
      event.tag.assign(tag.begin(), tag.end());
    } else if (number == 2 && type == 5) {
      event.value = std::bit_cast<float>(static_cast<std::uint32_t>(reader.fixed(4)));
    } else {
      reader.skip(type);
    }
  }
  return event;
}

// Event { int64 step = 2; Summary summary = 5 }, Summary { repeated Value value = 1 }
void read_event(std::string_view bytes, std::vector<ScalarEvent>& events) {
  WireReader reader(bytes);
  std::int64_t step = 0;
  std::string_view summary;
  while (!reader.done()) {
    auto [number, type] = reader.field();
    if (number == 2 && type == 0) {
      step = static_cast<std::int64_t>(reader.varint());
    } else if (number == 5 && type == 2) {
      summary = reader.take(reader.varint());
    } else {
      reader.skip(type);
    }
  }
  WireReader values(summary);
  while (!values.done()) {
    auto [number, type] = values.field();
    if (number == 1 && type == 2) {
      events.push_back(read_value(values.take(values.varint()), step));
    } else {
      values.skip(type);
    }
  }
}

}  // namespace

std::vector<ScalarEvent> read_scalar_events(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read " + path);
  std::string bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  std::vector<ScalarEvent> events;
  WireReader records(bytes);
  while (!records.done()) {
    std::uint64_t length = records.fixed(8);
    records.take(4);
    read_event(records.take(length), events);
    records.take(4);
  }
  return events;
}

std::vector<double> scalar_values(const std::vector<ScalarEvent>& events, const std::string& tag) {
  std::vector<double> values;
  for (const ScalarEvent& event : events) {
    if (event.tag == tag) values.push_back(event.value);
  }
  return values;
}

}  // namespace csrun::test
