#pragma once

#include <cerrno>
#include <chrono>
#include <zmq.hpp>

namespace csrun::stream {

// zmq::poll that treats a signal's interruption (EINTR: a stop request arrived) as a timeout, so
// the caller's loop goes round and sees it. Returns the number of ready items.
inline int poll_sockets(zmq::pollitem_t* items, std::size_t count,
                        std::chrono::milliseconds timeout) {
  try {
    return zmq::poll(items, count, timeout);
  } catch (const zmq::error_t& error) {
    if (error.num() == EINTR) return 0;
    throw;
  }
}

}  // namespace csrun::stream
