// A progress line on stderr for work that takes over a second (conformance, compile), redrawn in
// place ("\r"): only when stderr is a terminal, so nothing of it reaches a pipe or a log.
#pragma once
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace kiln::cli {

class Progress {
 public:
  explicit Progress(std::string what) : what_(std::move(what)), start_(std::chrono::steady_clock::now()) {}
  ~Progress() { clear(); }

  // Step `done` of `total` (total 0: unknown), about `item`.
  void update(size_t done, size_t total, const std::string& item) {
    if (!tty_ || std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1)) return;
    std::string line = what_ + " " + std::to_string(done) + (total ? "/" + std::to_string(total) : "") + "  " + item;
    if (line.size() > 100) line = line.substr(0, 100);
    std::fprintf(stderr, "\r%-100s", line.c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  // Erases the line before other output.
  void clear() {
    if (!shown_) return;
    std::fprintf(stderr, "\r%100s\r", "");
    std::fflush(stderr);
    shown_ = false;
  }

 private:
  std::string what_;
  std::chrono::steady_clock::time_point start_;
  bool tty_ = isatty(STDERR_FILENO) != 0;
  bool shown_ = false;
};

}  // namespace kiln::cli
