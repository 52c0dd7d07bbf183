#include "progress_line.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace csrun::runner {

namespace {

constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
constexpr int kBarWidth = 20;

std::string duration_text(double seconds) {
  auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", total / 3600, total / 60 % 60,
                  total % 60);
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld", total / 60, total % 60);
  }
  return text;
}

}  // namespace

ProgressLine::ProgressLine(std::ostream& out, bool live) : out_(out), live_(live) {}

bool ProgressLine::stdout_is_terminal() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDOUT_FILENO) == 1 && !(term && std::string_view(term) == "dumb");
}

void ProgressLine::show(const std::string& text, bool force) {
  if (!live_) return;
  text_ = text;
  auto now = std::chrono::steady_clock::now();
  if (!force && shown_ && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  draw();
}

void ProgressLine::hide() {
  if (!live_ || !shown_) return;
  out_ << "\r\033[K" << std::flush;
  shown_ = false;
}

void ProgressLine::finish() {
  hide();
  text_.clear();
}

void ProgressLine::restore() {
  if (live_ && !text_.empty()) draw();
}

void ProgressLine::draw() {
  out_ << '\r' << text_ << "\033[K" << std::flush;
  shown_ = true;
}

std::string progress_text(const std::string& stage, std::int64_t done, std::int64_t total,
                          double loss, double samples_per_second, double seconds_elapsed) {
  double fraction = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  auto filled = static_cast<int>(fraction * kBarWidth);
  std::string bar = "[" + std::string(static_cast<std::size_t>(filled), '#') +
                    std::string(static_cast<std::size_t>(kBarWidth - filled), '.') + "]";
  char numbers[160];
  std::snprintf(numbers, sizeof numbers, " %lld/%lld %3d%%  loss %.5f  %.1f samples/s",
                static_cast<long long>(done), static_cast<long long>(total),
                static_cast<int>(fraction * 100.0), loss, samples_per_second);
  std::string text = stage + " " + bar + numbers;
  if (done <= 0 || done >= total) return text;
  double left = seconds_elapsed / static_cast<double>(done) * static_cast<double>(total - done);
  return text + "  ETA " + duration_text(left);
}

}  // namespace csrun::runner
