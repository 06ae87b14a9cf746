// The progress printer behind cli/progress.h. A ticker thread redraws while a phase runs, so a
// long single step (one run of a large model) still shows its elapsed time.
#include "cli/progress.h"

#include "cli/common.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <thread>

namespace onnxtool::cli {
namespace {

using ProgressClock = std::chrono::steady_clock;

// A phase shorter than this shows nothing.
constexpr double kShowAfterSeconds = 1.0;
// A log gets a line when the phase advanced by this share since its last line (but not sooner
// than kLogMinGap after it), and at least every kLogMaxGap while it runs: a handful of lines per
// phase, whatever its number of steps.
constexpr double kLogStep = 0.1;
constexpr double kLogMinGap = 2.0;
constexpr double kLogMaxGap = 10.0;
// The time left is shown once this share of the steps is done, or after this long with a step
// done: the pace of the first step alone often includes one-time work.
constexpr double kEtaAfterShare = 0.1;
constexpr double kEtaAfterSeconds = 5.0;
// A terminal line is redrawn at most this often.
constexpr double kRedrawSeconds = 0.1;
constexpr auto kTick = std::chrono::milliseconds(250);

double seconds_between(ProgressClock::time_point a, ProgressClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

class ProgressPrinter {
 public:
  ~ProgressPrinter() { end(true); }

  void begin(const std::string& command) {
    std::lock_guard<std::mutex> lock(mutex_);
    command_ = command;
    terminal_ = isatty(STDERR_FILENO) != 0;
  }

  void set_quiet(bool q) {
    std::lock_guard<std::mutex> lock(mutex_);
    quiet_ = q;
  }

  void step(const ir::ProgressStep& s) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (quiet_ || stopped_) return;
    const auto now = ProgressClock::now();
    if (!active_ || s.phase != current_.phase) {
      finish_phase(now);
      active_ = true;
      phase_start_ = now;
      logged_ = false;
      logged_fraction_ = 0;
      if (!ticker_.joinable()) ticker_ = std::thread([this] { tick(); });
    }
    current_ = s;
    if (s.total > 0 && s.done >= s.total) {
      finish_phase(now);
      return;
    }
    show(now);
  }

  void print_result(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    erase();
    std::cout << line << "\n" << std::flush;
  }

  void note(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (quiet_) return;
    erase();
    std::cerr << line << "\n" << std::flush;
  }

  void warning(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    erase();
    std::cerr << line << "\n" << std::flush;
  }

  void error(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    logged_ = false;  // the phase did not finish: no "done" line
    finish_phase(ProgressClock::now());
    std::cerr << line << "\n" << std::flush;
  }

  void end(bool finished) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!finished) logged_ = false;  // a failed phase is not "done"
      finish_phase(ProgressClock::now());
      stopped_ = true;
    }
    wake_.notify_all();
    if (ticker_.joinable()) ticker_.join();
  }

 private:
  void tick() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopped_) {
      wake_.wait_for(lock, kTick);
      if (!stopped_ && active_) show(ProgressClock::now());
    }
  }

  std::string text(ProgressClock::time_point now) const {
    std::string t = current_.phase;
    if (current_.total > 0) {
      const int64_t percent = current_.done * 100 / current_.total;
      t += " " + std::to_string(current_.done) + "/" + std::to_string(current_.total) + " (" + std::to_string(percent) + "%)";
    }
    if (!current_.detail.empty()) t += ", " + current_.detail;
    const double elapsed = seconds_between(phase_start_, now);
    char shown[32];
    std::snprintf(shown, sizeof shown, ", %.0f s", elapsed);
    return prefix() + t + shown + time_left(elapsed);
  }

  // ", ~40 s left" (", ~3 min left" past 90 s): the steps left at the pace of those done, once
  // enough are done for the pace to mean something; "" before, or when the total is unknown.
  std::string time_left(double elapsed) const {
    if (current_.total <= 0 || current_.done <= 0 || current_.done >= current_.total) return "";
    const double fraction = static_cast<double>(current_.done) / static_cast<double>(current_.total);
    if (fraction < kEtaAfterShare && elapsed < kEtaAfterSeconds) return "";
    const double left = elapsed * (1 - fraction) / fraction;
    char buf[48];
    if (left < 90) std::snprintf(buf, sizeof buf, ", ~%.0f s left", std::max(1.0, left));
    else std::snprintf(buf, sizeof buf, ", ~%.0f min left", left / 60);
    return buf;
  }

  // "progress:" tells these lines from an error's one line (a failure after long work has both).
  std::string prefix() const { return "onnxtool " + command_ + ": progress: "; }

  // Shows the current step when the rules above allow it (mutex held).
  void show(ProgressClock::time_point now) {
    if (!active_ || seconds_between(phase_start_, now) < kShowAfterSeconds) return;
    if (terminal_) {
      if (drawn_ && seconds_between(drawn_at_, now) < kRedrawSeconds) return;
      std::string line = text(now);
      // A line wider than the terminal wraps, and the carriage return would not reach its start.
      winsize ws{};
      const size_t width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col : 80;
      if (line.size() >= width) line.resize(width - 1);
      std::cerr << "\r" << line << "\033[K" << std::flush;
      drawn_ = true;
      drawn_at_ = now;
      return;
    }
    const double fraction = current_.total > 0 ? static_cast<double>(current_.done) / static_cast<double>(current_.total) : 0;
    const double gap = logged_ ? seconds_between(logged_at_, now) : 0;
    const bool due = !logged_ || gap >= kLogMaxGap || (current_.total > 0 && fraction >= logged_fraction_ + kLogStep && gap >= kLogMinGap);
    if (!due) return;
    std::cerr << text(now) << "\n" << std::flush;
    logged_ = true;
    logged_at_ = now;
    logged_fraction_ = fraction;
  }

  // Takes the terminal line away (mutex held).
  void erase() {
    if (!drawn_) return;
    std::cerr << "\r\033[K" << std::flush;
    drawn_ = false;
  }

  // Ends the current phase: a log that heard of it hears that it is over (mutex held).
  void finish_phase(ProgressClock::time_point now) {
    if (!active_) return;
    active_ = false;
    erase();
    if (logged_) {
      char took[48];
      std::snprintf(took, sizeof took, " done in %.1f s", seconds_between(phase_start_, now));
      std::cerr << prefix() << current_.phase << took << "\n" << std::flush;
    }
    logged_ = false;
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread ticker_;
  bool quiet_ = false;
  bool terminal_ = false;
  bool stopped_ = false;
  std::string command_ = "onnxtool";
  bool active_ = false;
  ir::ProgressStep current_;
  ProgressClock::time_point phase_start_;
  bool drawn_ = false;
  ProgressClock::time_point drawn_at_;
  bool logged_ = false;
  ProgressClock::time_point logged_at_;
  double logged_fraction_ = 0;
};

ProgressPrinter& printer() {
  static ProgressPrinter p;
  return p;
}

}  // namespace

void set_quiet(bool q) { printer().set_quiet(q); }
void begin_progress(const std::string& command) { printer().begin(command); }
ir::Progress progress() {
  return [](const ir::ProgressStep& s) { printer().step(s); };
}
void report_step(const std::string& phase, int64_t done, int64_t total, const std::string& detail) {
  printer().step(ir::ProgressStep{phase, done, total, detail});
}
void result_line(const std::string& line) { printer().print_result(line); }
void end_progress() { printer().end(true); }
void abandon_progress() { printer().end(false); }
void info(const std::string& command, const std::string& line) { printer().note("onnxtool " + command + ": " + line); }
void warning(const std::string& command, const std::string& line) {
  printer().warning("onnxtool " + command + ": warning: " + one_line(line));
}
void error_line(const std::string& command, const std::string& line) { printer().error("onnxtool " + command + ": " + one_line(line)); }

}  // namespace onnxtool::cli
