// Running another program in a process group of its own (cli/subprocess.h).
#include "cli/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "ir/error.h"

extern char** environ;

namespace onnxtool::cli {
namespace {

/// The process group of the child under way (0: none) and the signal that interrupted it: the
/// handler kills the group at once, so that a Ctrl-C at the terminal (which reaches onnxtool
/// alone, the child being in a group of its own) ends the child's work too.
volatile sig_atomic_t g_child_group = 0;
volatile sig_atomic_t g_interrupted = 0;

extern "C" void on_interrupt(int sig) {
  g_interrupted = sig;
  if (g_child_group > 0) ::kill(-static_cast<pid_t>(g_child_group), SIGKILL);
}

constexpr int kInterrupts[] = {SIGINT, SIGTERM, SIGHUP};

/// Our handlers for the interrupts and SIGPIPE ignored while it lives; the former ones back after.
class SignalScope {
 public:
  SignalScope() {
    g_interrupted = 0;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < 3; ++i) ::sigaction(kInterrupts[i], &sa, &old_[i]);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, &old_pipe_);
  }
  ~SignalScope() {
    g_child_group = 0;
    for (size_t i = 0; i < 3; ++i) ::sigaction(kInterrupts[i], &old_[i], nullptr);
    ::sigaction(SIGPIPE, &old_pipe_, nullptr);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

 private:
  struct sigaction old_[3];
  struct sigaction old_pipe_;
};

/// A pipe's two ends, closed on exec (the child gets its copies by dup2 alone).
struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (::pipe2(fd, O_CLOEXEC) != 0) throw Error(ErrorKind::kInternal, std::string("pipe: ") + std::strerror(errno));
  }
  ~Pipe() {
    close(0);
    close(1);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  void close(int k) {
    if (fd[k] >= 0) ::close(fd[k]);
    fd[k] = -1;
  }
};

/// posix_spawn's attributes: a new process group, default dispositions for the signals onnxtool
/// handles or ignores meanwhile, no blocked signal.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnSetup(int in, int out, int err) {
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in, 0);
    posix_spawn_file_actions_adddup2(&actions, out, 1);
    posix_spawn_file_actions_adddup2(&actions, err, 2);
    posix_spawnattr_init(&attr);
    sigset_t defaults, none;
    sigemptyset(&defaults);
    for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP}) sigaddset(&defaults, s);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

void append_capped(std::string& to, const char* data, size_t n, size_t limit, bool& truncated) {
  if (limit && to.size() + n > limit) {
    truncated = true;
    n = to.size() < limit ? limit - to.size() : 0;
  }
  to.append(data, n);
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv, const ChildOptions& options) {
  ChildResult r;
  if (argv.empty()) throw Error(ErrorKind::kInternal, "run_child: no program");
  Pipe in, out, err;
  const SignalScope signals;
  std::vector<std::string> args = argv;
  std::vector<char*> pointers;
  for (std::string& a : args) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  pid_t pid = 0;
  {
    const SpawnSetup setup(in.fd[0], out.fd[1], options.merge_output ? out.fd[1] : err.fd[1]);
    r.start_error = ::posix_spawn(&pid, args[0].c_str(), &setup.actions, &setup.attr, pointers.data(), environ);
  }
  if (r.start_error != 0) return r;
  g_child_group = pid;
  in.close(0);
  out.close(1);
  err.close(1);
  if (options.merge_output) err.close(0);
  ::fcntl(in.fd[1], F_SETFL, O_NONBLOCK);
  if (options.input.empty()) in.close(1);

  // Feeding the child while reading it: one that writes much before it has read all its input
  // would otherwise wait on a full pipe while onnxtool waits on its input.
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  size_t sent = 0;
  bool exited = false;
  int status = 0;
  double exited_at = 0;
  char buf[65536];
  for (;;) {
    if (!exited) {
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) exited = true, exited_at = elapsed();
    }
    const bool open = in.fd[1] >= 0 || out.fd[0] >= 0 || err.fd[0] >= 0;
    if (exited && !open) break;
    if (g_interrupted) {
      r.interrupted = g_interrupted;
      break;
    }
    if (options.seconds > 0 && elapsed() > options.seconds) {
      r.timed_out = !exited;
      break;
    }
    // Exited, yet something it started holds the pipes open: a moment to drain, then it goes.
    if (exited && elapsed() - exited_at > 1.0) break;
    if (!open) {
      ::usleep(2000);
      continue;
    }
    pollfd fds[3] = {{in.fd[1], POLLOUT, 0}, {out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}};
    if (::poll(fds, 3, 50) < 0) {
      if (errno == EINTR) continue;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      throw Error(ErrorKind::kInternal, std::string("poll: ") + std::strerror(errno));
    }
    if (fds[0].revents) {
      const ssize_t n = ::write(in.fd[1], options.input.data() + sent, std::min(options.input.size() - sent, sizeof buf));
      if (n > 0) sent += static_cast<size_t>(n);
      // EPIPE: the child stopped reading, which is its business.
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || sent == options.input.size()) in.close(1);
    }
    for (int k = 1; k <= 2; ++k) {
      if (!fds[k].revents) continue;
      const ssize_t n = ::read(fds[k].fd, buf, sizeof buf);
      if (n > 0) append_capped(k == 1 ? r.out : r.err, buf, static_cast<size_t>(n), options.output_limit, r.truncated);
      else if (n == 0 || (errno != EAGAIN && errno != EINTR)) (k == 1 ? out : err).close(0);
    }
  }
  // Whatever is left of its group goes (a timeout, an interrupt, a grandchild holding the pipes).
  ::kill(-pid, SIGKILL);
  if (!exited)
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  if (WIFEXITED(status)) r.status = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  if (r.timed_out || r.interrupted) r.signal = 0;  // ours, not its
  return r;
}

}  // namespace onnxtool::cli
