// Verification of a rewritten model against its original.
#include "verify/reference.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <memory>
#include <sstream>

#include "ir/error.h"

namespace onnxtool::verify {
namespace {

bool is_float(ir::DataType t) {
  return t == ir::DataType::kFloat || t == ir::DataType::kDouble || t == ir::DataType::kFloat16 || t == ir::DataType::kBFloat16;
}

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

/// A copy that owns its bytes: a session's outputs may be views into the model's weights.
runner::Value owned(const runner::Value& v) {
  if (!v.is_tensor()) return v;
  return runner::Value::of(v.tensor.clone());
}

double max_finite_magnitude(const runner::Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.size(); ++i) {
    const double v = std::fabs(runner::element_as_double(t, i));
    if (std::isfinite(v)) m = std::max(m, v);
  }
  return m;
}

OutputCheck compare_output(const std::string& name, const runner::Value& a, const runner::Value& b, const Tolerance& tol) {
  OutputCheck c;
  c.name = name;
  c.type = a.describe();
  if (!a.is_tensor() || !b.is_tensor()) {
    // Sequences and optionals: the rewrites never change them; their description must hold.
    c.exact = true;
    c.within = a.describe() == b.describe();
    if (!c.within) c.why = "was " + a.describe() + ", now " + b.describe();
    return c;
  }
  c.exact = !is_float(a.tensor.dtype());
  const double scale = c.exact ? 1 : std::max(1.0, max_finite_magnitude(a.tensor));
  c.diff = runner::compare_tensors(a.tensor, b.tensor, tol.rtol, tol.atol * scale);
  c.within = c.diff.within();
  if (c.within) return c;
  if (!c.diff.problem.empty()) {
    c.why = c.diff.problem + " (" + a.describe() + " became " + b.describe() + ")";
  } else if (c.diff.nonfinite_count) {
    const auto& f = c.diff.nonfinite.front();
    c.why = std::to_string(c.diff.nonfinite_count) + " of " + std::to_string(c.diff.elements) +
            " elements became NaN/Inf or lost one (element " + std::to_string(f.index) + ": " + number(f.a) +
            " became " + number(f.b) + ")";
  } else if (c.exact) {
    c.why = std::to_string(c.diff.beyond) + " of " + std::to_string(c.diff.elements) +
            " elements differ (beyond tolerance: integer outputs must be exact)";
  } else {
    c.why = "max abs error " + number(c.diff.max_abs) + " at element " + std::to_string(c.diff.max_abs_index) + ", " +
            std::to_string(c.diff.beyond) + " of " + std::to_string(c.diff.elements) + " elements beyond tolerance (" +
            tol.name + ": rtol " + number(tol.rtol) + ", atol " + number(tol.atol) + ")";
  }
  return c;
}


/// A failure of the tool or the machine (a lost device, a pipeline the driver cannot build, bad
/// usage), not of the model: reported as it is, never as "the model does not run".
bool is_tool_failure(const Error& e) { return e.kind() == ErrorKind::kInternal || e.kind() == ErrorKind::kUsage; }

}  // namespace

bool VerifyResult::ok() const {
  return std::all_of(outputs.begin(), outputs.end(), [](const OutputCheck& c) { return c.within; });
}

std::string VerifyResult::first_failure() const {
  for (const auto& c : outputs)
    if (!c.within) return "output '" + c.name + "': " + c.why;
  return "";
}

Reference::Reference(ir::Model& original, const VerifyInputs& inputs) {
  // Threads: the process's default (--threads); reference_options_'s default device is the CPU.
  options_.device = inputs.device;
  runner::FeedOptions feed = inputs.feeds;
  const bool random = feed.dir.empty() && feed.files.empty();
  feed.random = feed.random || random;
  const auto cannot = [random](const Error& e) {
    if (is_tool_failure(e)) return e;
    return Error(ErrorKind::kFailed,
                 std::string("cannot verify: the original model does not run on ") +
                     (random ? "random inputs (symbolic dims of 1, 64 and 512 unless their sizes are given)" : "the given inputs") +
                     ": " + e.what() + "; give inputs, their sizes or value ranges, or skip verification",
                 Parameter{}, {"inputs", "input_shape", "input_range", "no_verify"});
  };
  std::unique_ptr<runner::Session> session;
  try {
    session = std::make_unique<runner::Session>(original, reference_options_);
  } catch (const Error& e) {
    throw cannot(e);
  }
  // The original's run is bounded too, unless --time-limit bounds the command: a model whose
  // Loop never ends must not hang optimize or convert.
  if (!runner::time_limit_set())
    session->set_deadline(std::chrono::steady_clock::now() + std::chrono::seconds(kVerifyOriginalSeconds),
                          "verification's bound of " + std::to_string(kVerifyOriginalSeconds) + " s on the original model's run",
                          {"time_limit", "no_verify"});
  for (const auto* o : session->outputs()) output_names_.push_back(o->value->name());
  // Random inputs: symbolic dims of 1 first; a model that cannot take them (an STFT frame longer
  // than one sample, a pooling window) gets larger ones before verification gives up.
  bool running = false;  // the user's files: their errors are theirs, reported as they are
  try {
    feeds_ = runner::feeds_that_run(*session, feed, [&](std::map<std::string, runner::Value>& feeds) {
      feeds = runner::conform_float_feeds(*session, feeds);
      outputs_.clear();
      running = true;
      const auto start = std::chrono::steady_clock::now();
      for (const auto& v : session->run(feeds)) outputs_.push_back(owned(v));
      original_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      running = false;
    });
  } catch (const Error& e) {
    if (!running) throw;
    throw cannot(e);
  }
  for (auto& [name, v] : feeds_) v = owned(v);
  random_ = random;
  std::ostringstream d;
  d << (random ? runner::random_inputs_description(feed) : feed.dir.empty() ? "files" : feed.dir) << ":";
  for (const auto& [name, v] : feeds_) d << " " << name << "=" << v.describe();
  description_ = d.str();
}

void Reference::bound(runner::Session& session) const {
  const double seconds = 20 * original_seconds_ + 10;
  std::ostringstream what;
  what << "verification's bound of " << std::setprecision(3) << seconds << " s (20 times the original's run of "
       << original_seconds_ << " s, plus 10 s)";
  session.set_deadline(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                              std::chrono::duration<double>(seconds)),
                       what.str());
}

VerifyResult Reference::check(ir::Model& candidate, const Tolerance& tolerance) const {
  std::vector<runner::Value> got;
  try {
    runner::Session session(candidate, options_);
    bound(session);
    const auto feeds = runner::conform_float_feeds(session, feeds_);
    got = session.run(feeds, output_names_);
  } catch (const Error& e) {
    if (is_tool_failure(e)) throw;
    throw Error(ErrorKind::kFailed, std::string("the result does not run where the original did: ") + e.what());
  }
  VerifyResult r;
  for (size_t i = 0; i < outputs_.size(); ++i) r.outputs.push_back(compare_output(output_names_[i], outputs_[i], got[i], tolerance));
  return r;
}

VerifyResult Reference::compare(const std::map<std::string, runner::Tensor>& outputs, const Tolerance& tolerance) const {
  VerifyResult r;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const auto it = outputs.find(output_names_[i]);
    if (it == outputs.end()) {
      OutputCheck c;
      c.name = output_names_[i];
      c.within = false;
      c.why = "missing";
      r.outputs.push_back(std::move(c));
      continue;
    }
    r.outputs.push_back(compare_output(output_names_[i], outputs_[i], runner::Value::of(it->second.clone()), tolerance));
  }
  return r;
}

std::string Reference::first_divergence(ir::Model& original, ir::Model& candidate, const Tolerance& tolerance) const {
  std::map<std::string, runner::Value> held;
  {
    runner::Session session(candidate, options_);
    bound(session);
    session.set_observer([&held](const ir::Value& value, const runner::Value& produced) {
      if (produced.is_tensor() && is_float(produced.tensor.dtype())) held[value.name()] = owned(produced);
    });
    session.run(runner::conform_float_feeds(session, feeds_));
  }
  std::string first;
  runner::Session session(original, reference_options_);
  bound(session);
  session.set_observer([&](const ir::Value& value, const runner::Value& produced) {
    if (!first.empty() || !produced.is_tensor() || !is_float(produced.tensor.dtype())) return;
    const auto it = held.find(value.name());
    if (it != held.end() && !compare_output(value.name(), produced, it->second, tolerance).within) first = value.name();
  });
  session.run(runner::conform_float_feeds(session, feeds_));
  return first;
}

std::map<std::string, runner::Value> Reference::feeds_for(ir::Model& candidate) const {
  runner::Session session(candidate, options_);
  return runner::conform_float_feeds(session, feeds_);
}

std::map<std::string, double> value_ranges(ir::Model& model, const std::map<std::string, runner::Value>& feeds) {
  std::map<std::string, double> ranges;
  const auto record = [&ranges](const std::string& name, const runner::Value& v) {
    if (!v.is_tensor() || !is_float(v.tensor.dtype())) return;
    double& m = ranges[name];
    m = std::max(m, max_finite_magnitude(v.tensor));
  };
  runner::Session session(model, runner::SessionOptions{1});
  session.set_observer([&](const ir::Value& value, const runner::Value& produced) { record(value.name(), produced); },
                       /*subgraphs=*/true);
  for (const auto& [name, v] : feeds) record(name, v);
  session.run(feeds);
  return ranges;
}

}  // namespace onnxtool::verify
