// onnxtool's entry point: parses the command line and runs one subcommand.
#include <iostream>

#include "cli/common.h"

#ifndef ONNXTOOL_VERSION
#define ONNXTOOL_VERSION "0.0.0"
#endif

int main(int argc, char** argv) {
  using namespace onnxtool::cli;
  CLI::App app{"onnxtool: check, optimize, quantize, convert and run ONNX models"};
  app.set_version_flag("--version", std::string("onnxtool ") + ONNXTOOL_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);
  // One line, as every other error: "onnxtool: --rtol: 'nan' is not a finite number (see --help)".
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("onnxtool: ") + e.what() + " (see --help)\n";
  });

  Action action;
  register_inspect(app, action);
  register_check(app, action);
  register_run(app, action);
  register_convert(app, action);
  register_optimize(app, action);
  register_quantize(app, action);
  register_compare(app, action);
  register_diff(app, action);
  register_devices(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (!action) return kExitUsage;
  std::string command;
  for (const auto* sub : app.get_subcommands()) command = sub->get_name();
  return run_action(command, action);
}
