// The doctest runner for onnxtool's library tests. A run in which a test gave up for want of data,
// a tool or a device (testing::skip_run) and nothing failed exits 77, which ctest reports as
// skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "test_data.h"

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int status = context.run();
  if (context.shouldExit() || status != 0) return status;
  return onnxtool::testing::run_skipped() ? onnxtool::testing::kSkipExitCode : 0;
}
