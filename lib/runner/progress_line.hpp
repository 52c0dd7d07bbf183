#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace csrun::runner {

// A live status line at the bottom of a terminal ("Train [#####.....] 120/600 ..."), redrawn in
// place. Log lines clear it before they print and it comes back after them. When the output is
// not a terminal (a file, a pipe, CI) it prints nothing, so logs stay plain lines.
class ProgressLine {
 public:
  ProgressLine(std::ostream& out, bool live);

  // Whether standard output is a terminal that understands "\r" and erase-to-end-of-line.
  static bool stdout_is_terminal();

  bool live() const { return live_; }
  // Draws `text`, at most every 100 ms unless `force`.
  void show(const std::string& text, bool force = false);
  // Erases the line for a log line to print; restore() draws it again after.
  void hide();
  void restore();
  // Erases the line for good (a stage ended).
  void finish();

 private:
  void draw();
  std::ostream& out_;
  bool live_;
  bool shown_ = false;
  std::string text_;
  std::chrono::steady_clock::time_point last_draw_{};
};

// "Train [##########..........] 300/600  50%  loss 2.41250  27.5 samples/s  ETA 0:11": the
// estimate of the time left assumes the remaining steps take as long as the done ones.
std::string progress_text(const std::string& stage, std::int64_t done, std::int64_t total,
                          double loss, double samples_per_second, double seconds_elapsed);

}  // namespace csrun::runner
