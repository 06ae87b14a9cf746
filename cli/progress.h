// Progress of long work on stderr: one updating line on a terminal, a few plain lines in a log,
// nothing for phases shorter than a second, nothing at all with --quiet.
#pragma once

#include <string>

#include "ir/progress.h"

namespace onnxtool::cli {

/// --quiet: no progress and no informational lines (errors and results stay).
void set_quiet(bool quiet);

/// Names the command in progress lines ("onnxtool quantize: ..."); run_action calls it.
void begin_progress(const std::string& command);

/// The callback to hand to libraries (ir::Progress): shows their steps on stderr.
ir::Progress progress();

/// Reports a step of the command's own work (writing the output...).
void report_step(const std::string& phase, int64_t done, int64_t total, const std::string& detail = {});

/// Prints a line of results on stdout while work goes on, the terminal's progress line taken
/// off first (the next step draws it again).
void result_line(const std::string& line);

/// Ends the current phase and stops showing progress, at the end of the command.
void end_progress();
/// The same before an error line: the phase did not finish, so no "done" line.
void abandon_progress();

/// An informational line on stderr ("onnxtool convert: note: ..."), unless --quiet.
void info(const std::string& command, const std::string& line);

/// A warning on stderr ("onnxtool convert: warning: ..."), --quiet or not: what the result
/// does not prove.
void warning(const std::string& command, const std::string& line);

/// An error line on stderr while the command goes on (check of several models: one file that
/// cannot be read): the current phase ends without a "done" line, and progress continues after.
void error_line(const std::string& command, const std::string& line);

}  // namespace onnxtool::cli
