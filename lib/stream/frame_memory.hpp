#pragma once

namespace csrun::stream {

// Keeps the memory of freed frames in the process for the next ones. ZeroMQ allocates every
// batch's frame (on its I/O thread when receiving) and frees it after use; glibc would hand
// blocks of that size back to the kernel and fault them in again page by page for the next
// batch, which took a third of a worker's and a coordinator's time at 0.8 MB a batch. Called by
// the coordinator and the worker when they start; affects the whole process.
void keep_frame_memory();

}  // namespace csrun::stream
