// Writes docs/ops.md, the op index: for every operator, its family, schema versions, and the files
// of its shape function, CPU and Vulkan kernels, with its quantizer rule and opset adapters, all
// read from the registries (nothing is listed by hand).
//
// Usage: make_ops_index FILE          writes the index to FILE
//        make_ops_index --check FILE  exit 1 unless FILE is what this program would write now
//
// The ops_index_up_to_date test runs the check, so a registration that moves or appears without
// the index being regenerated fails it.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "convert/opset_adapters.h"
#include "ir/op_schema.h"
#include "ir/ops/families.h"
#include "quant/op_rules.h"
#include "runner/kernel.h"
#include "runner/vulkan/backend.h"

namespace {

using namespace onnxtool;

/// One operator (all its versions) as the index shows it.
struct OpRow {
  std::string domain, name;
  std::string family;    ///< from its shape function's registration; "" when it has none
  std::string versions;  ///< "1, 6, 13" (deprecated versions marked)
  std::set<std::string> cpu_files, vulkan_files;
};

std::string join(const std::set<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "-" : out;
}

/// Every operator of the schema registry and of the kernel tables, keyed "domain::name".
std::map<std::string, OpRow> collect_ops() {
  std::map<std::string, OpRow> ops;
  for (const ir::OpSchema* s : ir::SchemaRegistry::instance().all()) {
    OpRow& row = ops[s->domain + "::" + s->name];
    row.domain = s->domain;
    row.name = s->name;
    if (!s->family.empty()) row.family = std::string(s->family);
    row.versions += (row.versions.empty() ? "" : ", ") + std::to_string(s->since_version) +
                    (s->deprecated ? " (deprecated)" : "");
  }
  auto add_kernels = [&ops](const auto& entries, std::set<std::string> OpRow::*files) {
    for (const auto& [key, list] : entries) {
      OpRow& row = ops[key];
      if (row.name.empty()) {  // a kernel without a schema
        row.domain = key.substr(0, key.find("::"));
        row.name = key.substr(key.find("::") + 2);
      }
      for (const auto& e : list) (row.*files).insert(std::string(e.file));
    }
  };
  add_kernels(runner::KernelRegistry::instance().entries(), &OpRow::cpu_files);
  add_kernels(runner::vulkan::kernel_table().entries(), &OpRow::vulkan_files);
  return ops;
}

/// The quantizer's rule for an op: the modes that quantize it and the integer kernel, or "-".
std::string quant_rule(const OpRow& op) {
  if (!op.domain.empty()) return "-";
  for (const quant::OpRule& r : quant::op_rules()) {
    if (r.op_type != op.name) continue;
    std::string modes = r.static_qdq ? "static" : "";
    if (r.dynamic) modes += std::string(modes.empty() ? "" : "+") + (r.dynamic_default ? "dynamic" : "dynamic (opt-in)");
    if (!r.integer_kernel.empty()) modes += " -> " + std::string(r.integer_kernel);
    return modes;
  }
  return "-";
}

/// The opset converter's adapter rows of an op, "13 (up, down)".
std::string adapters(const OpRow& op) {
  std::map<int, std::string> rows;  // by boundary, ascending
  if (op.domain.empty())
    for (const convert::OpsetAdapter& a : convert::opset_adapters())
      if (a.op == op.name)
        rows[a.boundary] = std::to_string(a.boundary) + " (" + (a.up ? "up" : "") + (a.up && a.down ? ", " : "") +
                           (a.down ? "down" : "") + ")";
  std::string out;
  for (const auto& [boundary, row] : rows) out += (out.empty() ? "" : ", ") + row;
  return out.empty() ? "-" : out;
}

void write_table(std::ostream& out, const std::vector<const OpRow*>& rows) {
  out << "| Op | Domain | Versions | Shape function | CPU kernel | Vulkan kernel | Quantizer rule | Adapters |\n"
      << "|---|---|---|---|---|---|---|---|\n";
  for (const OpRow* op : rows) {
    const std::string shape_file = op->family.empty() ? "-" : "ir/ops/" + op->family + "_shapes.cpp";
    out << "| " << op->name << " | " << (op->domain.empty() ? "ai.onnx" : op->domain) << " | "
        << (op->versions.empty() ? "-" : op->versions) << " | " << shape_file << " | " << join(op->cpu_files)
        << " | " << join(op->vulkan_files) << " | " << quant_rule(*op) << " | " << adapters(*op) << " |\n";
  }
}

std::string generate() {
  const std::map<std::string, OpRow> ops = collect_ops();
  std::ostringstream out;
  out << "# Operator index\n\n"
      << "Generated from the registries by `make_ops_index docs/ops.md` (tests/make_ops_index.cpp); do not\n"
      << "edit by hand. The `ops_index_up_to_date` test fails when this file is stale. How families map\n"
      << "to files: docs/architecture.md, \"Finding an op by name\".\n\n"
      << "Versions are the schema versions (ir/ops/onnx_schemas.def). An op's family is the one whose\n"
      << "`ir/ops/<family>_shapes.cpp` registers its shape function; its kernels are registered by files\n"
      << "of that family (tests/kernel_coverage_test.cpp checks it). Adapters are the version\n"
      << "boundaries with a row in convert/opset_adapters.cpp.\n";
  for (std::string_view family : ir::kOpFamilies) {
    std::vector<const OpRow*> rows;
    for (const auto& [key, op] : ops)
      if (op.family == family) rows.push_back(&op);
    out << "\n## " << family << " (" << rows.size() << " ops)\n\n";
    write_table(out, rows);
  }
  std::vector<const OpRow*> rest;
  for (const auto& [key, op] : ops)
    if (op.family.empty()) rest.push_back(&op);
  out << "\n## No shape function (" << rest.size() << " ops)\n\n"
      << "Operators no family registers a shape function for (deprecated, or not supported).\n\n";
  write_table(out, rest);
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 1 && args[0].rfind("-", 0) != 0) {
      std::ofstream(args[0], std::ios::binary) << generate();
      return 0;
    }
    if (args.size() == 2 && args[0] == "--check") {
      std::ifstream in(args[1], std::ios::binary);
      std::stringstream on_disk;
      on_disk << in.rdbuf();
      if (in && on_disk.str() == generate()) return 0;
      std::cerr << args[1] << ": differs from what the registries say; run make_ops_index " << args[1] << "\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "make_ops_index: " << e.what() << "\n";
    return 2;
  }
  std::cerr << "usage: make_ops_index FILE | make_ops_index --check FILE\n";
  return 2;
}
