#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace csrun::stream {

// The messages between a coordinator and its data workers, one ZeroMQ frame each.
//   worker -> coordinator: hello, ready, batch, failure, heartbeat
//   coordinator -> worker: welcome, reject, request, bye
enum class MessageType : std::uint8_t {
  hello = 1,  // secret, rank, pid
  welcome,    // text: the job (encoded LoaderJobs); rank: the worker's number
  reject,     // text: why
  ready,      // values: samples per epoch of each stream; memfd, nonce: its SharedSlots (-1: none)
  request,    // ticket, stream, epoch, sample: produce the batch there; slot: into that slot
  batch,      // ticket, slot, values: the samples' dataset indices, payload: the batch's bytes
              // (empty when it is in the slot)
  failure,    // ticket (0: none), text: what went wrong
  heartbeat,
  bye,  // rank: 1 when another trainer's coordinator follows
};

struct Message {
  MessageType type = MessageType::heartbeat;
  std::string text;
  std::int64_t rank = -1;
  std::int64_t pid = 0;
  std::uint64_t ticket = 0;
  std::uint32_t stream = 0;
  std::int64_t epoch = 0;
  std::int64_t sample = 0;
  std::vector<std::int64_t> values;
  std::int64_t memfd = -1;  // ready: the fd of the worker's SharedSlots in its process; -1: none
  std::uint64_t nonce = 0;
  std::int64_t slot = -1;              // a SharedSlots slot; -1: the batch is in the frame
  std::span<const std::byte> payload;  // batch: points into the buffer it was decoded from
};

// A message of this type with every field at its default.
inline Message make_message(MessageType type) {
  Message message;
  message.type = type;
  return message;
}

// A frame that is not a message of this protocol: wrong magic or version, an unknown type,
// lengths that do not add up, trailing bytes.
class FrameError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

const char* message_type_name(MessageType type);

// The frame's size, and the frame written into `out` (exactly that size). A payload whose
// data() is null is not copied: its bytes, at payload_offset(), are left for the caller to
// write in place.
std::size_t frame_size(const Message& message);
std::size_t payload_offset(const Message& message);
void encode(const Message& message, std::span<std::byte> out);
std::vector<std::byte> encode(const Message& message);

// Reads a frame; `payload` of a batch points into `frame`. Throws FrameError.
Message decode(std::span<const std::byte> frame);

}  // namespace csrun::stream
