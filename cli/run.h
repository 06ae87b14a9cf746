// `onnxtool run`: its options, the run (run_session.cpp), its files (run_files.cpp: --output-dir,
// --expect) and its report (run_report.cpp).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "cli/dump_dir.h"
#include "ir/model_io.h"
#include "runner/profile.h"
#include "runner/session.h"

namespace onnxtool::cli {

struct RunOptions {
  std::string model;
  FeedFlags feed;  ///< --input, --inputs, --random, --seed, --input-shape, --input-range
  std::string output_dir;
  std::string output_format = "npy";  ///< of tensors; sequences and optionals are always .pb
  std::string expect_dir;             ///< reference outputs to compare with
  double rtol = 1e-3, atol = 1e-5;    ///< --expect's tolerance
  std::vector<std::string> outputs;
  std::string dump_dir;  ///< --dump-dir: every value computed, subgraphs' once per run
  DumpLimits dump_limits;  ///< --max-dump-files, --max-dump-bytes
  std::string device = "cpu";
  int benchmark = 0;
  bool profile = false;
  std::string trace_file;  ///< --profile FILE: the Chrome trace
  std::string report;      ///< --report FILE.html: the profile as an HTML page with charts
  bool json = false;
  std::set<std::string> given;  ///< the options on the command line
};

/// What one `run` computed: the outputs of its first run, and the timings of the runs after it.
struct ModelRun {
  ir::LoadedModel loaded;  ///< the session runs it
  std::unique_ptr<runner::Session> session;
  std::vector<std::string> names;  ///< of the outputs, in order
  std::vector<runner::Value> results;
  std::unique_ptr<ValueDump> dump;  ///< --dump-dir
  runner::Profiler profiler;  ///< --profile
  runner::ProfileSummary profile;
  std::vector<double> times;  ///< of the --benchmark runs, in ms, sorted
  std::string device_id;      ///< "cpu", or the device the session ran on
  /// --profile: each node of the main graph's FLOPs on this run's input shapes (nodes of
  /// unknown cost left out), or why none are known; and this runner's GEMM rate on the run's
  /// threads (on the CPU only: size 0 otherwise).
  std::map<std::string, uint64_t> node_flops;
  std::string cost_unknown;
  runner::GemmPeak gemm_peak;
};

/// Loads the model, makes its inputs, runs it once (with --dump-dir writing every value), then
/// --benchmark and --profile's runs.
void run_model_once(const RunOptions& o, ModelRun& run);

/// --output-dir must be a directory or a path where one can be made; checked before running so
/// that a bad path costs no run and leaves nothing behind.
void check_output_dir(const std::string& dir);
/// Refuses folders that would overwrite each other (--output-dir, --dump-dir, --expect).
void refuse_shared_folders(const RunOptions& o);

/// --output-dir: writes each output; returns the files, by output ("" for none).
std::vector<std::string> write_outputs(const RunOptions& o, const ModelRun& run);

/// One output against its reference.
struct OutputMatch {
  std::string file;      ///< the reference file; "" when --expect DIR has none for this output
  bool match = true;
  std::string worst;     ///< where it differs most, or what differs (type, shape, length)
  double max_abs = 0, max_rel = 0;
  int64_t beyond = 0, elements = 0;  ///< elements beyond tolerance (NaN and infinities included), of all
};
/// --expect DIR: each output against its reference file in DIR (runner::find_reference_file).
std::vector<OutputMatch> match_outputs(const RunOptions& o, const ModelRun& run);
/// One line: "matches FILE (max abs 1e-07)" / "differs from FILE: element [0,1]: ...".
std::string describe_match(const OutputMatch& m);
nlohmann::json match_json(const OutputMatch& m);

/// The report on stdout: each output (its file and match), the device, timings, the dump.
void print_run(const RunOptions& o, const ModelRun& run, const std::vector<std::string>& files,
               const std::vector<OutputMatch>& matches);
/// The same as one JSON document.
nlohmann::json run_json(const RunOptions& o, const ModelRun& run, const std::vector<std::string>& files,
                        const std::vector<OutputMatch>& matches);
/// --report FILE.html: the profile of `doc` (run_json's) as an HTML page, through the safe writer.
void write_run_report(const std::string& path, const nlohmann::json& doc);
/// The failure's one line on stderr when an output differs from --expect's: the first output
/// that differs, and how many more do. Returns the exit code.
int report_mismatch(const RunOptions& o, const ModelRun& run, const std::vector<OutputMatch>& matches);

}  // namespace onnxtool::cli
