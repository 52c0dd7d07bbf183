#pragma once

#include <cerrno>
#include <chrono>
#include <zmq.hpp>

namespace csrun::stream {

// The ZeroMQ calls the streaming makes, proof against signals. A signal with a handler (the stop
// request's SIGTERM or SIGINT) interrupts the poll(2) inside any of them, SA_RESTART or not, and
// ZeroMQ reports EINTR: nothing was sent or received, so the call is made again.

// zmq::poll, an interruption counted as a timeout, so the caller's loop goes round and sees the
// request. Returns the number of ready items.
inline int poll_sockets(zmq::pollitem_t* items, std::size_t count,
                        std::chrono::milliseconds timeout) {
  try {
    return zmq::poll(items, count, timeout);
  } catch (const zmq::error_t& error) {
    if (error.num() == EINTR) return 0;
    throw;
  }
}

inline zmq::recv_result_t receive(zmq::socket_t& socket, zmq::message_t& message,
                                  zmq::recv_flags flags = zmq::recv_flags::none) {
  for (;;) {
    try {
      return socket.recv(message, flags);
    } catch (const zmq::error_t& error) {
      if (error.num() != EINTR) throw;
    }
  }
}

template <class Frame>
void send(zmq::socket_t& socket, Frame&& frame, zmq::send_flags flags = zmq::send_flags::none) {
  for (;;) {
    try {
      (void)socket.send(frame, flags);
      return;
    } catch (const zmq::error_t& error) {
      if (error.num() != EINTR) throw;
    }
  }
}

}  // namespace csrun::stream
