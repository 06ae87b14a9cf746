# Sourced by tests/cli/*.sh: how a CLI test reports data that testdata/fetch_models.sh provides
# (models, onnxruntime-node, python3-onnx, the backend suite...) but that is missing. Such a test is
# skipped (exit 77, ctest's SKIP_RETURN_CODE), never passed; scripts/test.sh fails under CI when
# anything was skipped.
data_missing=0

# missing_data WHAT: a part of the test cannot run; the rest goes on.
missing_data() {
  data_missing=$((data_missing + 1))
  echo "ONNXTOOL-SKIP: $* (testdata/fetch_models.sh installs it)"
}

# skip_all WHAT: the whole test cannot run.
skip_all() {
  missing_data "$@"
  exit 77
}

# finish FAILED: the exit status: 1 when anything failed, else 77 when data was missing, else 0.
finish() {
  if [[ $1 -ne 0 ]]; then exit 1; fi
  if [[ $data_missing -ne 0 ]]; then exit 77; fi
  exit 0
}

# judged STATUS: the exit status of a sub-test (a tests/ort/*.py judge): 0 passed, 77 skipped for
# missing data (noted here too; returns 0), else failed (returns 1).
judged() {
  case $1 in
    0) return 0 ;;
    77) data_missing=$((data_missing + 1)); return 0 ;;
    *) return 1 ;;
  esac
}
