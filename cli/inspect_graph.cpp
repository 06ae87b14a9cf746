// `onnxtool inspect MODEL --graph OUT.dot|OUT.svg`: the main graph drawn by ir::graph_dot, laid
// out by Graphviz's dot for .svg.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/common.h"
#include "cli/inspect.h"
#include "ir/edit.h"
#include "ir/extract.h"
#include "ir/graph_dot.h"
#include "ir/model_io.h"
#include "ir/output_file.h"
#include "ir/shape_inference.h"

extern char** environ;

namespace onnxtool::cli {
namespace {

const char* const kInstallDot =
    "Graphviz's dot is not on PATH: install graphviz (apt-get install graphviz) to write .svg; "
    "a .dot file needs nothing";

/// Seconds as given: 300, 0.5.
std::string seconds_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// "svg" or "dot" from OUT's extension (any case); "" for anything else.
std::string graph_format(const std::string& path) {
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return "";
  std::string ext = path.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == "svg" || ext == "dot" ? ext : "";
}

/// The `dot` program PATH leads to, "" when there is none.
std::string find_dot() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    const std::string candidate = dir + "/dot";
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return "";
}

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
  void close(int k) {
    if (fd[k] >= 0) ::close(fd[k]);
    fd[k] = -1;
  }
};

/// SIGPIPE ignored while it lives: a dot that exits before reading all its input must make the
/// write fail (EPIPE), not kill onnxtool. The child gets the default back (posix_spawn).
struct IgnoreSigpipe {
  struct sigaction old {};
  IgnoreSigpipe() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, &old);
  }
  ~IgnoreSigpipe() { ::sigaction(SIGPIPE, &old, nullptr); }
};

/// Runs `dot -Tsvg` on `text` and returns its SVG. Past `seconds` it is killed and
/// TimeLimitReached says so; a failure of dot is Error(kInput) with its first stderr line.
std::string run_dot(const std::string& dot, const std::string& text, double seconds, size_t nodes, const std::string& out) {
  Pipe in, svg, err;
  IgnoreSigpipe quiet;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.fd[0], 0);
  posix_spawn_file_actions_adddup2(&actions, svg.fd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  std::string arg0 = "dot", arg1 = "-Tsvg";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, dot.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (spawned != 0) throw_usage_error(std::string(kInstallDot) + " (" + dot + ": " + std::strerror(spawned) + ")");
  in.close(0);
  svg.close(1);
  err.close(1);
  ::fcntl(in.fd[1], F_SETFL, O_NONBLOCK);

  // Feeding dot while reading it: a large graph's SVG fills the pipe before dot has read all
  // of its input, so writing everything first would wait forever.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::string result, errors;
  size_t sent = 0;
  if (text.empty()) in.close(1);
  char buf[65536];
  while (in.fd[1] >= 0 || svg.fd[0] >= 0 || err.fd[0] >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      throw TimeLimitReached("--graph " + out + ": dot did not lay out the graph (" + std::to_string(nodes) +
                             " nodes) within " + seconds_text(seconds) +
                             " s; cluster it (--cluster-depth), draw part of it (--from/--to), write .dot (no layout) or "
                             "raise --time-limit");
    }
    pollfd fds[3] = {{in.fd[1], POLLOUT, 0}, {svg.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}};
    if (::poll(fds, 3, static_cast<int>(std::min<long long>(left, 1000))) < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorKind::kInternal, std::string("poll: ") + std::strerror(errno));
    }
    if (fds[0].revents) {
      const ssize_t n = ::write(in.fd[1], text.data() + sent, std::min<size_t>(text.size() - sent, sizeof buf));
      if (n > 0) sent += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || sent == text.size()) in.close(1);  // EPIPE: dot gave up
    }
    for (int k = 1; k <= 2; ++k) {
      if (!fds[k].revents) continue;
      const ssize_t n = ::read(fds[k].fd, buf, sizeof buf);
      if (n > 0) (k == 1 ? result : errors).append(buf, static_cast<size_t>(n));
      else if (n == 0 || (errno != EAGAIN && errno != EINTR)) (k == 1 ? svg : err).close(0);
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string first = errors.substr(0, errors.find('\n'));
  if (WIFSIGNALED(status))
    throw_input_error("--graph " + out + ": dot died of signal " + std::to_string(WTERMSIG(status)) +
                      (first.empty() ? "" : ": " + first));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || result.empty())
    throw_input_error("--graph " + out + ": dot -Tsvg failed (exit " + std::to_string(WEXITSTATUS(status)) + ")" +
                      (first.empty() ? "" : ": " + first));
  return result;
}

}  // namespace

void check_graph_request(const GraphRequest& r) {
  const std::string format = graph_format(r.output);
  if (format.empty())
    throw_usage_error("--graph " + r.output + ": write .dot (Graphviz text) or .svg (laid out by Graphviz's dot)");
  if (format == "svg" && find_dot().empty()) throw_usage_error(kInstallDot);
  if (r.from.empty() != r.to.empty())
    throw_usage_error("--from and --to go together: the tensors that begin and end the part drawn");
  if (r.time_limit_given && format != "svg")
    throw_usage_error("--time-limit bounds the layout of an .svg by dot; a .dot is not laid out");
  if (!(r.time_limit > 0)) throw_usage_error("--time-limit " + seconds_text(r.time_limit) + ": seconds, more than 0");
}

GraphWritten write_graph(const std::string& model_path, const GraphRequest& r) {
  const std::string format = graph_format(r.output);
  auto loaded = ir::load_model(model_path);
  ir::check_not_input(loaded.info, r.output, "--graph " + r.output);
  // Opened before the work: a folder, a read-only file or a FIFO nothing reads at OUT is refused
  // at once, and nothing is put in place unless everything succeeds.
  ir::OutputFile file(r.output, "--graph " + r.output);
  ir::Model& model = loaded.model;
  if (!model.graph) throw_input_error(model_path + ": the model has no graph to draw");

  if (!r.input_shapes.empty()) {
    ir::EditRequest request;
    for (const auto& [name, dims] : r.input_shapes) {
      std::vector<ir::Dim> d;
      for (int64_t x : dims) d.push_back(ir::Dim::of(x));
      request.input_shapes.emplace_back(name, d);
    }
    ir::edit_model(model, request);
  } else {
    // A drawing shows what inference can tell; contradictions are `onnxtool check`'s to report.
    ir::DiagnosticSink ignored;
    ir::ShapeInferenceOptions inference;
    inference.check_declared = false;
    ir::infer_shapes(model, ignored, inference);
  }
  if (!r.from.empty()) {
    try {
      ir::extract_subgraph(model, r.from, r.to);
    } catch (const Error& e) {
      // extract's library names its tensors "inputs" and "outputs"; here they are --from and --to.
      const std::string& about = e.about().name;
      if (about != "inputs" && about != "outputs") throw;
      throw Error(e.kind(), e.what(), {about == "inputs" ? "from" : "to", e.about().value});
    }
  }

  ir::DotOptions options;
  options.cluster_depth = r.cluster_depth;
  ir::DotGraph dot = ir::graph_dot(model, options);
  const std::string bytes = format == "svg" ? run_dot(find_dot(), dot.text, r.time_limit, dot.nodes, r.output) : dot.text;
  file.write(bytes);
  file.sync();
  file.commit();
  return {format, dot.nodes, dot.edges, dot.clusters, bytes.size()};
}

}  // namespace onnxtool::cli
