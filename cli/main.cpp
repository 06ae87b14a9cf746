// onnxtool's entry point: parses the command line and runs one subcommand.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <streambuf>

#include "cli/common.h"
#include "cli/flags.h"
#include "ir/command_files.h"
#include "ir/error.h"

#ifndef ONNXTOOL_VERSION
#define ONNXTOOL_VERSION "0.0.0"
#endif

namespace {

using namespace onnxtool::cli;

/// The subcommands' names, in the order --help lists them.
std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  return names;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

/// "unknown command 'inspec'; did you mean 'inspect'?" (without the suggestion when none is close).
std::string unknown_command(const CLI::App& app, const std::string& word) {
  const std::string near = closest_match(word, command_names(app));
  return "unknown command '" + word + "'" + (near.empty() ? "; the commands: " + join(command_names(app)) : "; did you mean '" + near + "'?");
}

/// An argument that reads as an option: a dash and more, but not a negative number.
bool looks_like_option(const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-') return false;
  char* end = nullptr;
  std::strtod(arg.c_str(), &end);
  return *end != '\0';
}

/// "onnxtool quantize", "onnxtool compare and onnxtool run", or past two "check, compare,
/// convert and run": the commands other than `except` that have the option `flag` (spelled
/// exactly), or "" when none has it.
std::string commands_with_option(const CLI::App& app, const CLI::App& except, const std::string& flag) {
  std::vector<std::string> owners;
  for (const CLI::App* other : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (other == &except) continue;
    // Former names count too: `run --calib-data` was meant for quantize.
    if (other->get_option_no_throw(flag) != nullptr) owners.push_back(other->get_name());
  }
  const std::string prefix = owners.size() <= 2 ? "onnxtool " : "";
  std::string out;
  for (size_t i = 0; i < owners.size(); ++i)
    out += (i == 0 ? "" : i + 1 == owners.size() ? " and " : ", ") + prefix + owners[i];
  return out;
}

/// The line for the slips CLI11 words vaguely ("A subcommand is required", "The following
/// argument was not expected: --jsn"): an unknown option or command, with what was probably
/// meant; a missing command, with the list of them. "" for other errors, which keep CLI11's.
std::string usage_slip(const CLI::App& app) {
  const std::vector<CLI::App*> selected = app.get_subcommands();
  const CLI::App* sub = selected.empty() ? nullptr : selected.front();
  // An unknown option first: it often leaves its value behind as a stray positional, or leaves
  // a required option unset, and CLI11 would report that instead.
  for (const CLI::App* owner : {sub, &app}) {
    if (!owner) continue;
    for (const std::string& arg : owner->remaining()) {
      if (!looks_like_option(arg)) continue;
      const std::string flag = arg.substr(0, arg.find('='));
      std::string near = closest_match(flag, option_names(*owner));
      // `onnxtool run M --calib-data D`: an option of another command, named as such.
      if (owner == sub) {
        if (const std::string others = commands_with_option(app, *sub, flag); !others.empty())
          return "onnxtool " + sub->get_name() + ": " + flag + " is an option of " + others + ", not of " + sub->get_name() +
                 (near.empty() ? "" : "; did you mean " + near + "?") + " (see --help)";
      }
      // `onnxtool --json inspect M`: the command's own option, given before the command.
      if (near.empty() && owner == &app && sub) {
        if (const std::string own = closest_match(flag, option_names(*sub)); !own.empty())
          near = "`onnxtool " + sub->get_name() + " " + own + "` (options follow their command)";
      }
      // Named by the command when there is one, even for an option given before it.
      return std::string("onnxtool") + (sub ? " " + sub->get_name() : "") + ": unknown option " + flag +
             (near.empty() ? "" : "; did you mean " + near + "?") + " (see --help)";
    }
  }
  if (sub) return "";
  const std::vector<std::string> rest = app.remaining();
  if (rest.empty())
    return "onnxtool: name a command: " + join(command_names(app)) + " (`onnxtool help COMMAND` describes one; see --help)";
  const std::string& word = rest.front();
  std::error_code ec;
  if (word.find('.') != std::string::npos && std::filesystem::exists(word, ec))
    return "onnxtool: '" + word + "' is not a command; the command comes first, as in `onnxtool inspect " + word + "` (see --help)";
  return "onnxtool: " + unknown_command(app, word) + " (see --help)";
}

/// `onnxtool help [COMMAND]`: the general help, or COMMAND's, as --help prints them.
int print_help(const CLI::App& app, const std::string& topic) {
  if (topic.empty()) {
    // Not app.help(): that prints the help of the selected subcommand, `help` itself.
    std::cout << app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
    return kExitOk;
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->get_name() == topic) {
      std::cout << sub->help(app.get_name());
      return kExitOk;
    }
  onnxtool::throw_usage_error(unknown_command(app, topic));
}

}  // namespace

namespace {

/// Standard output with the control characters a model's names may hold (a terminal escape, a
/// carriage return that rewrites the line) written as \xNN text, newlines and tabs as they are:
/// a model cannot recolour, hide or overwrite what onnxtool prints. (A name holding a newline
/// still starts a line: --json escapes it.)
class EscapingBuffer : public std::streambuf {
 public:
  explicit EscapingBuffer(std::streambuf* out) : out_(out) {}

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::streamsize start = 0;
    for (std::streamsize i = 0; i < n; ++i) {
      const auto u = static_cast<unsigned char>(s[i]);
      if ((u >= 0x20 && u != 0x7f) || u == '\n' || u == '\t') continue;
      if (out_->sputn(s + start, i - start) != i - start) return 0;
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      if (out_->sputn(hex, 4) != 4) return 0;
      start = i + 1;
    }
    return out_->sputn(s + start, n - start) == n - start ? n : 0;
  }
  int sync() override { return out_->pubsync(); }

 public:
  std::streambuf* out() const { return out_; }

 private:
  std::streambuf* out_;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace onnxtool::cli;
  EscapingBuffer escaping(std::cout.rdbuf());
  std::cout.rdbuf(&escaping);
  struct Restore {
    std::streambuf* buffer;
    ~Restore() { std::cout.rdbuf(buffer); }
  } restore{escaping.out()};
  // Named here, not by argv[0]: help and man pages say `onnxtool`, however the binary was reached.
  CLI::App app{"onnxtool: check, optimize, quantize, convert and run ONNX models", "onnxtool"};
  app.set_version_flag("--version", std::string("onnxtool ") + ONNXTOOL_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);
  // One line, as every other error, naming the command when there is one: "onnxtool run:
  // --rtol: 'nan' is not a finite number (see --help)".
  app.failure_message([](const CLI::App* root, const CLI::Error& e) {
    const std::vector<const CLI::App*> selected = root->get_subcommands([](const CLI::App* sub) { return sub->parsed(); });
    const std::string who = selected.empty() ? "onnxtool" : "onnxtool " + selected.front()->get_name();
    std::string what = e.what();
    // CLI11's "--seed: At Most 1 required but received 2", said plainly.
    const std::string at_most = "At Most 1 required but received ";
    if (const size_t at = what.find(at_most); at != std::string::npos)
      what = what.substr(0, at) + "given " + what.substr(at + at_most.size()) + " times; it takes one value";
    return who + ": " + what + " (see --help)\n";
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
  register_extract(app, action);
  register_edit(app, action);
  register_reduce(app, action);
  add_shared_flags(app);  // --quiet and --threads on every command
  add_examples(app);
  std::string help_topic;
  CLI::App* help = app.add_subcommand("help", "Print this help, or a command's options: onnxtool help COMMAND");
  help->add_option("COMMAND", help_topic, "the command to describe");
  help->callback([&] { action = [&] { return print_help(app, help_topic); }; });

  // --json anywhere: failures, usage errors included, come as JSON on stdout too.
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--json") set_json_errors(true);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e) == 0 ? kExitOk : kExitUsage;  // --help, --version
    const std::vector<CLI::App*> selected = app.get_subcommands();
    const std::string command = selected.empty() ? "" : selected.front()->get_name();
    if (const std::string line = usage_slip(app); !line.empty()) {
      std::cerr << line << "\n";
      print_json_error(command, line.substr(line.find(": ") + 2), kExitUsage);
      return kExitUsage;
    }
    app.exit(e);
    print_json_error(command, e.what(), kExitUsage);
    return kExitUsage;
  }
  if (!action) return kExitUsage;
  std::string command;
  for (const auto* sub : app.get_subcommands()) command = sub->get_name();
  onnxtool::ir::track_command_files();  // no output of the command replaces what it reads
  return run_action(command, [&action] {
    apply_run_environment();
    return action();
  });
}
