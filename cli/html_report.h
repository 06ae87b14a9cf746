// The self-contained HTML pages of `--report FILE.html` (quantize, compare, run --profile): one
// file each, inline CSS and SVG charts, no script but the report's JSON data block.
//
// Every figure on a page is read from the report's JSON document. Cells and bars show four
// significant digits; the exact figure, as the JSON prints it (nlohmann's shortest round-trip
// form), is in the tooltip and in a data-value attribute, as for every plotted point, and the
// whole document sits in <script type="application/json" id="report-data">, for tests and
// scripts to compare.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace onnxtool::cli::html {

/// `text` with & < > " ' escaped for element content and attribute values.
std::string escape(const std::string& text);

/// A figure of a JSON report as a double: a number, "inf"/"-inf" (json_number's infinities), or
/// NaN for anything else (null: not measured).
double value_of(const nlohmann::json& v);

/// A figure of a JSON report as the report prints it: a number's JSON text, a string as is,
/// "n/a" for null.
std::string text_of(const nlohmann::json& v);

/// True when `path` ends in ".html" or ".htm" (any case).
bool is_html_path(const std::string& path);

/// A point along the graph marked on a line chart (a first divergence, a layer kept float).
struct Marker {
  size_t index = 0;   ///< into the chart's rows
  std::string label;  ///< shown on hover and in the legend
  std::string kind;   ///< a CSS class: "diverge" (red) or "float" (grey)
};

/// One line of a line chart: a value per row, NaN/inf shown as marked gaps.
struct Series {
  std::string name;
  std::vector<nlohmann::json> values;  ///< JSON figures (value_of reads them)
};

struct LineChart {
  std::string title;
  std::string y_label;
  std::vector<std::string> rows;  ///< the x axis: row names in graph order
  std::vector<Series> series;
  std::vector<Marker> markers;
  bool log_y = false;  ///< values <= 0 are then gaps too
};

struct Bar {
  std::string label;
  nlohmann::json value;
  std::string note;  ///< shown after the value
};

struct ScatterPoint {
  std::string label;
  nlohmann::json x, y;
};

struct Scatter {
  std::string title;
  std::string x_label, y_label;
  std::vector<ScatterPoint> points;
  bool log_x = false, log_y = false;
};

/// A table cell: its text, and the JSON figure behind it (data-value) when it shows one.
struct Cell {
  std::string text;
  const nlohmann::json* value = nullptr;
  std::string kind;  ///< a CSS class, e.g. "bad"
};
/// A JSON figure as a cell: four significant digits, the exact figure in its tooltip.
Cell figure(const nlohmann::json& v);

/// A page under construction: sections of text, charts and tables, then finish().
class Page {
 public:
  explicit Page(std::string title);
  void heading(const std::string& text);
  /// A paragraph of plain text (escaped).
  void paragraph(const std::string& text);
  /// Horizontal bars, in the given order; at most `max_bars` (the rest counted in a note).
  void bar_chart(const std::string& title, const std::string& unit, const std::vector<Bar>& bars, size_t max_bars = 40);
  /// Values along the graph; more rows than fit are reduced to each bucket's extremes (and
  /// the markers), which the caption says.
  void line_chart(const LineChart& chart);
  /// The distribution of the finite values in `bins` bins; the others counted in the caption.
  void histogram(const std::string& title, const std::string& x_label, const std::vector<nlohmann::json>& values, int bins = 20);
  void scatter(const Scatter& chart);
  /// Rows beyond `max_rows` are left out, which a note says.
  void table(const std::vector<std::string>& headers, const std::vector<std::vector<Cell>>& rows, size_t max_rows = 500);
  /// The scalar figures of a JSON object (one level of nested objects flattened to "a.b"), as
  /// a two-column table; arrays are left out.
  void summary(const nlohmann::json& doc);
  /// The whole page, with `data` as its JSON data block.
  std::string finish(const nlohmann::json& data) const;

 private:
  std::string title_;
  std::string body_;
};

}  // namespace onnxtool::cli::html
