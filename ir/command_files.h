// The files of the running command: what it read, what it will write. An output never replaces
// a file the same command read (a reference output, a calibration sample, an input tensor, the
// model), whatever path reaches it, and two outputs of one command never land on one file.
//
// Off until track_command_files() is called: the CLI turns it on for the one command a process
// runs; libraries, tests and tools that load and save many models in one process leave it off.
#pragma once

#include <cstdint>
#include <string>

namespace onnxtool::ir {

void track_command_files();

/// A regular file the command opened for reading (device and inode of its fstat); `path`
/// names it in the error of an output that would replace it. Does nothing when tracking is off.
void note_input_file(uint64_t device, uint64_t inode, const std::string& path);

/// The command replaces this input on purpose (--in-place): writing it is allowed.
void release_input_file(const std::string& path);

/// Throws Error(kUsage) "WHAT: is PATH, which this command reads; choose another file" when the
/// existing regular file (device, inode) was noted as an input.
void check_not_read(uint64_t device, uint64_t inode, const std::string& what);

/// Claims `path` as one output of the running command, before anything is written: a second
/// claim of the same file (the same path once symlinks are resolved, or the same existing file)
/// throws Error(kUsage) naming both. `what` names the flag ("--report r.json").
void claim_output(const std::string& path, const std::string& what);

}  // namespace onnxtool::ir
