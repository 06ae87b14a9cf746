// convert_verified: the order of a conversion's steps and where verification fits between them.
#include "verify/convert.h"

#include <chrono>

#include "ir/diagnostic.h"
#include "ir/shape_inference.h"

namespace onnxtool::verify {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

Tolerance default_tolerance(const ConvertRequest& request) {
  return request.precision == convert::Precision::kKeep ? kRewriteTolerance : kFp16Tolerance;
}

ConvertResult convert_verified(ir::Model& model, const ConvertRequest& request, const std::function<ir::Model()>& reload) {
  ConvertResult r;
  // The original runs first (the same object is then converted in place).
  const auto start = Clock::now();
  if (request.rewrites() && request.verify) {
    ir::report_progress(request.progress, "verification: running the original", 0, 1);
    r.reference.emplace(model, *request.verify);
    ir::report_progress(request.progress, "verification: running the original", 1, 1);
  }
  r.verify_seconds = seconds_since(start);

  if (request.opset && request.precision == convert::Precision::kKeep) {
    const auto from = model.opset_version("");
    if (from && *from == request.opset) {
      r.unchanged = true;
      return r;
    }
  }
  // Everything before the precision change; run again on a fresh load for each float16 round.
  const auto prepare = [&request](ir::Model& m) {
    convert::VersionReport v;
    if (request.opset) v = convert::convert_opset(m, request.opset);
    if (request.precision == convert::Precision::kFloat16 && request.preprocess) convert::preprocess_for_fp16(m);
    return v;
  };
  r.version = prepare(model);
  if (request.precision == convert::Precision::kFloat16) {
    if (r.reference) {
      // Guided: what reaches float16's limits on the verification inputs (an STFT power
      // spectrum of 6e5), then where float16 departs beyond tolerance, stays float32.
      const auto guided_start = Clock::now();
      r.guided.emplace(to_fp16_guided(
          model,
          [&] {
            ir::Model fresh = reload();
            prepare(fresh);
            return fresh;
          },
          request.fp16, *r.reference, request.tolerance, request.progress));
      ir::report_progress(request.progress, kGuidedFp16Phase, 1, 1);
      r.verify_seconds += seconds_since(guided_start);
      r.precision = r.guided->report;
      r.verified = r.guided->verified;
    } else {
      r.precision = convert::to_fp16(model, request.fp16);
    }
  } else if (request.precision == convert::Precision::kFloat32) {
    r.precision = convert::to_fp32(model);
  }

  if (r.reference && !r.guided) {
    const auto check_start = Clock::now();
    ir::report_progress(request.progress, "verification: running the result", 0, 1);
    r.verified = r.reference->check(model, request.tolerance);
    ir::report_progress(request.progress, "verification: running the result", 1, 1);
    r.verify_seconds += seconds_since(check_start);
  }
  if (!r.verified.ok()) return r;

  if (request.infer_shapes) {
    // Contradictions do not stop the conversion: `check` reports them.
    ir::DiagnosticSink sink;
    ir::infer_shapes(r.output(model), sink);
    r.inferred = ir::store_inferred_value_info(r.output(model));
    r.inference_errors = sink.error_count();
  }
  return r;
}

}  // namespace onnxtool::verify
