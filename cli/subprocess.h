// Running another program from a command (reduce's --command, inspect --graph's dot): in a
// process group of its own, fed and read through pipes, bounded in time, ended with its group
// when onnxtool is interrupted.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace onnxtool::cli {

struct ChildOptions {
  std::string input;           ///< written to its stdin, which is then closed (empty: closed at once)
  double seconds = 0;          ///< past this its process group is killed (0: no limit)
  bool merge_output = false;   ///< stderr into `out`, interleaved as written
  size_t output_limit = 0;     ///< bytes kept of each stream (0: all); the rest is read and dropped
};

/// How a child ended and what it wrote.
struct ChildResult {
  int start_error = 0;     ///< errno of a failed start (then nothing else is set)
  int status = 0;          ///< exit status, when it exited
  int signal = 0;          ///< the signal that ended it, else 0
  bool timed_out = false;  ///< ended by ChildOptions::seconds
  int interrupted = 0;     ///< SIGINT, SIGTERM or SIGHUP that reached onnxtool meanwhile (the group is killed)
  bool truncated = false;  ///< a stream went past ChildOptions::output_limit
  std::string out;
  std::string err;
};

/// Runs argv[0] (a path, not searched on PATH) with `argv`. While it runs SIGPIPE is ignored in
/// onnxtool (a child that stops reading makes the write fail, not onnxtool die) and SIGINT,
/// SIGTERM and SIGHUP kill the child's group and are reported in `interrupted`: the caller ends
/// its work, as the default action would have. Whatever the child started in its group goes
/// with it at a timeout; a grandchild that keeps the output pipes open past the child's exit is
/// killed too.
ChildResult run_child(const std::vector<std::string>& argv, const ChildOptions& options);

}  // namespace onnxtool::cli
