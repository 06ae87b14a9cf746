// The self-contained HTML pages of --report FILE.html: escaping, the page with its inline CSS,
// and the SVG charts (bars, lines along the graph, histograms, scatter) and tables they show.
#include "cli/html_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

namespace onnxtool::cli::html {
namespace {

constexpr double kWidth = 960, kLeft = 70, kRight = 20, kTop = 24, kBottom = 56;
constexpr double kPlotWidth = kWidth - kLeft - kRight;
/// Rows a line chart draws one by one (with a point and a tooltip each); beyond, the rows are
/// reduced to each bucket's lowest and highest value.
constexpr size_t kMaxPointRows = 300;
constexpr size_t kMaxLineRows = 1200;
constexpr size_t kMaxLegend = 30;

const char* const kStyle = R"(body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}td.bad{color:#b00020;font-weight:600}
figure{margin:12px 0}figcaption{font-size:13px;color:#555;margin:4px 0}p.note{font-size:13px;color:#555}
svg{background:#fff;border:1px solid #eee}svg text{font-size:11px;fill:#333}
.axis{stroke:#888;stroke-width:1}.grid{stroke:#eee;stroke-width:1}
.s0{stroke:#1f77b4;fill:#1f77b4}.s1{stroke:#d62728;fill:#d62728}.s2{stroke:#2ca02c;fill:#2ca02c}.s3{stroke:#9467bd;fill:#9467bd}
path.line{fill:none;stroke-width:1.5}.bar{fill:#4e79a7}.hist{fill:#76b7b2}.dot{fill:#4e79a7;fill-opacity:.7}
.gap{stroke:#b00020;stroke-width:2}.diverge{stroke:#b00020;stroke-width:1.5;stroke-dasharray:4 3}
.float{stroke:#999;stroke-width:1;stroke-dasharray:2 3}ul.legend{font-size:13px;columns:2}
)";

/// A coordinate with one decimal: enough for a screen, and the same bytes on every machine.
std::string coord(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

/// An axis tick's label: three significant digits.
std::string tick(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

/// A figure beside a bar: four significant digits.
std::string tick4(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string attr(const std::string& name, const std::string& value) { return " " + name + "=\"" + escape(value) + "\""; }

/// A name cut to `n` characters for an axis (the full name is in the tooltip).
std::string shorten(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 1) + "~"; }

bool plottable(double v, bool log) { return std::isfinite(v) && (!log || v > 0); }

/// The value range of an axis and where a value falls on it.
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  /// Fits the plottable values; a range of one value (or none) is widened around it.
  void fit(const std::vector<double>& values) {
    lo = std::numeric_limits<double>::infinity();
    hi = -lo;
    for (double v : values)
      if (plottable(v, log)) {
        lo = std::min(lo, log ? std::log10(v) : v);
        hi = std::max(hi, log ? std::log10(v) : v);
      }
    if (!(lo <= hi)) lo = 0, hi = 1;
    if (hi - lo < 1e-12) lo -= 0.5, hi += 0.5;
  }
  /// 0..1 along the axis.
  double at(double v) const { return ((log ? std::log10(v) : v) - lo) / (hi - lo); }
  /// About five ticks: decades on a log axis, else evenly spaced values.
  std::vector<double> ticks() const {
    std::vector<double> t;
    if (log && hi - lo >= 2) {
      const double step = std::max(1.0, std::ceil((hi - lo) / 6));
      for (double e = std::ceil(lo); e <= hi + 1e-9; e += step) t.push_back(std::pow(10.0, e));
    } else if (log) {
      // Less than two decades: five ticks evenly spaced on the log axis.
      for (int i = 0; i <= 4; ++i) t.push_back(std::pow(10.0, lo + (hi - lo) * i / 4));
    } else {
      for (int i = 0; i <= 4; ++i) t.push_back(lo + (hi - lo) * i / 4);
    }
    return t;
  }
};

/// The figure's opening: its caption and the SVG element of `height`.
std::string open_svg(const std::string& title, double height) {
  return "<figure><figcaption>" + escape(title) + "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + coord(kWidth) +
         "\" height=\"" + coord(height) + "\" viewBox=\"0 0 " + coord(kWidth) + " " + coord(height) + "\">\n";
}

/// The vertical axis with its ticks and grid lines, and its label.
std::string y_axis(const Axis& axis, double top, double plot_height, const std::string& label) {
  std::string s;
  for (double t : axis.ticks()) {
    const double y = top + plot_height * (1 - axis.at(t));
    s += "<line class=\"grid\" x1=\"" + coord(kLeft) + "\" x2=\"" + coord(kWidth - kRight) + "\" y1=\"" + coord(y) + "\" y2=\"" + coord(y) +
         "\"/><text x=\"" + coord(kLeft - 4) + "\" y=\"" + coord(y + 4) + "\" text-anchor=\"end\">" + escape(tick(t)) + "</text>\n";
  }
  s += "<line class=\"axis\" x1=\"" + coord(kLeft) + "\" x2=\"" + coord(kLeft) + "\" y1=\"" + coord(top) + "\" y2=\"" + coord(top + plot_height) +
       "\"/><line class=\"axis\" x1=\"" + coord(kLeft) + "\" x2=\"" + coord(kWidth - kRight) + "\" y1=\"" + coord(top + plot_height) +
       "\" y2=\"" + coord(top + plot_height) + "\"/>\n";
  s += "<text x=\"12\" y=\"" + coord(top + plot_height / 2) + "\" text-anchor=\"middle\" transform=\"rotate(-90 12 " +
       coord(top + plot_height / 2) + ")\">" + escape(label) + "</text>\n";
  return s;
}

/// The rows of a line chart drawn for one series: every row when they are few, else each
/// bucket's lowest, highest and first non-finite row, and every marked row.
std::vector<size_t> drawn_rows(const std::vector<double>& v, const std::set<size_t>& marked, bool log) {
  std::vector<size_t> rows;
  if (v.size() <= kMaxLineRows) {
    for (size_t i = 0; i < v.size(); ++i) rows.push_back(i);
    return rows;
  }
  std::set<size_t> keep(marked.begin(), marked.end());
  const size_t bucket = (v.size() + kMaxLineRows / 2 - 1) / (kMaxLineRows / 2);
  for (size_t b = 0; b < v.size(); b += bucket) {
    size_t lo = v.size(), hi = v.size(), bad = v.size();
    for (size_t i = b; i < std::min(v.size(), b + bucket); ++i) {
      if (!plottable(v[i], log)) {
        if (bad == v.size()) bad = i;
        continue;
      }
      if (lo == v.size() || v[i] < v[lo]) lo = i;
      if (hi == v.size() || v[i] > v[hi]) hi = i;
    }
    for (size_t i : {lo, hi, bad})
      if (i < v.size()) keep.insert(i);
  }
  rows.assign(keep.begin(), keep.end());
  return rows;
}

}  // namespace

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

double value_of(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string() && v.get<std::string>() == "inf") return std::numeric_limits<double>::infinity();
  if (v.is_string() && v.get<std::string>() == "-inf") return -std::numeric_limits<double>::infinity();
  return std::numeric_limits<double>::quiet_NaN();
}

std::string text_of(const nlohmann::json& v) {
  if (v.is_null()) return "n/a";
  if (v.is_string()) return v.get<std::string>();
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool is_html_path(const std::string& path) {
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".html" || ext == ".htm";
}

// Four significant digits in the cell; the exact figure in its tooltip and data-value.
Cell figure(const nlohmann::json& v) { return Cell{v.is_number_float() ? tick4(v.get<double>()) : text_of(v), &v, "num"}; }

Page::Page(std::string title) : title_(std::move(title)) {}

void Page::heading(const std::string& text) { body_ += "<h2>" + escape(text) + "</h2>\n"; }

void Page::paragraph(const std::string& text) { body_ += "<p class=\"note\">" + escape(text) + "</p>\n"; }

void Page::bar_chart(const std::string& title, const std::string& unit, const std::vector<Bar>& bars, size_t max_bars) {
  if (bars.empty()) return paragraph(title + ": nothing to show");
  const size_t shown = std::min(bars.size(), max_bars);
  const double row = 18, label_width = 260, left = label_width + 8, width = kWidth - left - 160;
  double top_value = 0;
  for (size_t i = 0; i < shown; ++i)
    if (const double v = value_of(bars[i].value); std::isfinite(v)) top_value = std::max(top_value, v);
  std::string s = open_svg(title, kTop + row * static_cast<double>(shown) + 8);
  s += "<g class=\"bars\"" + attr("data-unit", unit) + ">\n";
  for (size_t i = 0; i < shown; ++i) {
    const Bar& b = bars[i];
    const double v = value_of(b.value), y = kTop + row * static_cast<double>(i);
    // Beside the bar four digits; the exact figure in the tooltip and data-value.
    const std::string note = b.note.empty() ? "" : " " + b.note;
    const std::string value_text = (std::isfinite(v) ? tick4(v) : text_of(b.value)) + " " + unit + note;
    s += "<g" + attr("data-label", b.label) + attr("data-value", text_of(b.value)) + "><title>" +
         escape(b.label + ": " + text_of(b.value) + " " + unit + note) +
         "</title><text x=\"" + coord(label_width) + "\" y=\"" + coord(y + 13) + "\" text-anchor=\"end\">" + escape(shorten(b.label, 42)) +
         "</text>";
    if (std::isfinite(v)) {
      const double w = top_value > 0 ? width * std::max(0.0, v) / top_value : 0;
      s += "<rect class=\"bar\" x=\"" + coord(left) + "\" y=\"" + coord(y + 2) + "\" width=\"" + coord(w) + "\" height=\"" +
           coord(row - 4) + "\"/><text x=\"" + coord(left + w + 4) + "\" y=\"" + coord(y + 13) + "\">" + escape(value_text) + "</text>";
    } else {
      s += "<line class=\"gap\" x1=\"" + coord(left) + "\" x2=\"" + coord(left + 10) + "\" y1=\"" + coord(y + 9) + "\" y2=\"" + coord(y + 9) +
           "\"/><text x=\"" + coord(left + 14) + "\" y=\"" + coord(y + 13) + "\">" + escape(value_text) + "</text>";
    }
    s += "</g>\n";
  }
  s += "</g></svg>";
  if (shown < bars.size()) s += "<figcaption>" + std::to_string(bars.size() - shown) + " more not shown</figcaption>";
  body_ += s + "</figure>\n";
}

void Page::line_chart(const LineChart& c) {
  const size_t n = c.rows.size();
  if (n == 0) return paragraph(c.title + ": no rows");
  const double plot_height = 260, height = kTop + plot_height + kBottom;
  Axis axis;
  axis.log = c.log_y;
  std::vector<std::vector<double>> values(c.series.size());
  std::vector<double> all;
  for (size_t k = 0; k < c.series.size(); ++k) {
    for (const auto& v : c.series[k].values) values[k].push_back(value_of(v));
    all.insert(all.end(), values[k].begin(), values[k].end());
  }
  axis.fit(all);
  const auto x_of = [&](size_t i) { return kLeft + (n == 1 ? kPlotWidth / 2 : kPlotWidth * static_cast<double>(i) / static_cast<double>(n - 1)); };
  const auto y_of = [&](double v) { return kTop + plot_height * (1 - axis.at(v)); };
  std::set<size_t> marked;
  for (const auto& m : c.markers)
    if (m.index < n) marked.insert(m.index);
  std::string s = open_svg(c.title, height) + y_axis(axis, kTop, plot_height, c.y_label);
  // The x axis: the rows' names when they fit, else their positions.
  if (n <= 40) {
    for (size_t i = 0; i < n; ++i)
      s += "<text x=\"" + coord(x_of(i)) + "\" y=\"" + coord(kTop + plot_height + 10) + "\" text-anchor=\"end\" transform=\"rotate(-40 " +
           coord(x_of(i)) + " " + coord(kTop + plot_height + 10) + ")\">" + escape(shorten(c.rows[i], 14)) + "</text>\n";
  } else {
    for (int t = 0; t <= 4; ++t) {
      const size_t i = (n - 1) * static_cast<size_t>(t) / 4;
      s += "<text x=\"" + coord(x_of(i)) + "\" y=\"" + coord(kTop + plot_height + 16) + "\" text-anchor=\"middle\">#" +
           std::to_string(i) + "</text>\n";
    }
  }
  for (const auto& m : c.markers) {
    if (m.index >= n) continue;
    s += "<line" + attr("class", m.kind) + " x1=\"" + coord(x_of(m.index)) + "\" x2=\"" + coord(x_of(m.index)) + "\" y1=\"" + coord(kTop) +
         "\" y2=\"" + coord(kTop + plot_height) + "\"" + attr("data-row", c.rows[m.index]) + "><title>" + escape(m.label) + "</title></line>\n";
  }
  bool reduced = false;
  for (size_t k = 0; k < c.series.size(); ++k) {
    const std::string cls = "s" + std::to_string(k % 4);
    const std::vector<size_t> rows = drawn_rows(values[k], marked, c.log_y);
    reduced = reduced || rows.size() < n;
    std::string path, points, gaps;
    bool pen_down = false;
    for (size_t i : rows) {
      const double v = values[k][i];
      const std::string tip = "<title>" + escape(c.rows[i] + " (#" + std::to_string(i) + "): " + c.series[k].name + " " +
                                                 text_of(c.series[k].values[i])) + "</title>";
      if (!plottable(v, c.log_y)) {
        // A gap: the line breaks, and a red tick under the axis says where and why (unless a
        // marker explains the row: a layer kept float has no figure).
        pen_down = false;
        if (marked.count(i)) continue;
        gaps += "<line class=\"gap\" x1=\"" + coord(x_of(i)) + "\" x2=\"" + coord(x_of(i)) + "\" y1=\"" + coord(kTop + plot_height + 1) +
                "\" y2=\"" + coord(kTop + plot_height + 7) + "\"" + attr("data-row", c.rows[i]) +
                attr("data-value", text_of(c.series[k].values[i])) + ">" + tip + "</line>\n";
        continue;
      }
      path += (pen_down ? " L" : " M") + coord(x_of(i)) + " " + coord(y_of(v));
      pen_down = true;
      if (rows.size() <= kMaxPointRows)
        points += "<circle" + attr("class", cls) + " cx=\"" + coord(x_of(i)) + "\" cy=\"" + coord(y_of(v)) + "\" r=\"2.5\"" +
                  attr("data-row", c.rows[i]) + attr("data-value", text_of(c.series[k].values[i])) + ">" + tip + "</circle>\n";
    }
    s += "<g" + attr("data-series", c.series[k].name) + ">";
    if (!path.empty()) s += "<path" + attr("class", "line " + cls) + " d=\"" + path.substr(1) + "\"/>\n";
    s += points + gaps + "</g>\n";
  }
  s += "</svg>\n<figcaption>";
  for (size_t k = 0; k < c.series.size(); ++k)
    s += "<svg width=\"14\" height=\"10\"><line class=\"s" + std::to_string(k % 4) +
         "\" x1=\"0\" x2=\"14\" y1=\"5\" y2=\"5\" stroke-width=\"3\"/></svg> " +
         escape(c.series[k].name) + " &#160; ";
  s += std::to_string(n) + " rows in graph order" + (c.log_y ? "; log scale" : "") +
       (reduced ? "; too many to draw each: every bucket of rows is drawn by its lowest and highest value" : "") +
       "; red ticks under the axis: no finite value" + std::string(c.log_y ? " (or not above 0)" : "") + "</figcaption>\n";
  if (!c.markers.empty()) {
    s += "<ul class=\"legend\">";
    for (size_t i = 0; i < c.markers.size() && i < kMaxLegend; ++i)
      s += "<li" + attr("class", c.markers[i].kind) + ">" + escape(c.markers[i].label) + "</li>";
    if (c.markers.size() > kMaxLegend) s += "<li>" + std::to_string(c.markers.size() - kMaxLegend) + " more</li>";
    s += "</ul>\n";
  }
  body_ += s + "</figure>\n";
}

void Page::histogram(const std::string& title, const std::string& x_label, const std::vector<nlohmann::json>& values, int bins) {
  std::vector<double> finite;
  for (const auto& v : values)
    if (const double d = value_of(v); std::isfinite(d)) finite.push_back(d);
  const std::string left_out = std::to_string(values.size() - finite.size()) + " not finite, left out";
  if (finite.empty()) return paragraph(title + ": no finite value (" + left_out + ")");
  Axis axis;
  axis.fit(finite);
  std::vector<size_t> counts(static_cast<size_t>(bins));
  for (double v : finite)
    ++counts[std::min(counts.size() - 1, static_cast<size_t>(std::max(0.0, axis.at(v) * bins)))];
  Axis count_axis;
  count_axis.lo = 0;
  count_axis.hi = static_cast<double>(*std::max_element(counts.begin(), counts.end()));
  const double plot_height = 200;
  std::string s = open_svg(title, kTop + plot_height + kBottom) + y_axis(count_axis, kTop, plot_height, "count");
  const double bin_width = kPlotWidth / bins, bin_span = (axis.hi - axis.lo) / bins;
  for (size_t b = 0; b < counts.size(); ++b) {
    const double h = plot_height * static_cast<double>(counts[b]) / count_axis.hi;
    const double from = axis.lo + bin_span * static_cast<double>(b);
    s += "<rect class=\"hist\" x=\"" + coord(kLeft + bin_width * static_cast<double>(b) + 1) + "\" y=\"" + coord(kTop + plot_height - h) +
         "\" width=\"" + coord(bin_width - 2) + "\" height=\"" + coord(h) + "\" data-count=\"" + std::to_string(counts[b]) + "\"><title>" +
         escape(tick(from) + " to " + tick(from + bin_span) + ": " + std::to_string(counts[b])) + "</title></rect>\n";
  }
  for (int t = 0; t <= 4; ++t)
    s += "<text x=\"" + coord(kLeft + kPlotWidth * t / 4) + "\" y=\"" + coord(kTop + plot_height + 16) + "\" text-anchor=\"middle\">" +
         escape(tick(axis.lo + (axis.hi - axis.lo) * t / 4)) + "</text>\n";
  s += "<text x=\"" + coord(kLeft + kPlotWidth / 2) + "\" y=\"" + coord(kTop + plot_height + 40) + "\" text-anchor=\"middle\">" +
       escape(x_label) + "</text>\n</svg>\n<figcaption>" + std::to_string(finite.size()) + " values in " + std::to_string(bins) +
       " bins; " + escape(left_out) + "</figcaption>";
  body_ += s + "</figure>\n";
}

void Page::scatter(const Scatter& c) {
  std::vector<double> xs, ys;
  size_t shown = 0;
  for (const auto& p : c.points) {
    xs.push_back(value_of(p.x));
    ys.push_back(value_of(p.y));
    shown += plottable(xs.back(), c.log_x) && plottable(ys.back(), c.log_y);
  }
  if (shown == 0) return paragraph(c.title + ": no point to show (" + std::to_string(c.points.size()) + " without both figures)");
  Axis x_axis, y_axis_range;
  x_axis.log = c.log_x;
  y_axis_range.log = c.log_y;
  x_axis.fit(xs);
  y_axis_range.fit(ys);
  const double plot_height = 300;
  std::string s = open_svg(c.title, kTop + plot_height + kBottom) + y_axis(y_axis_range, kTop, plot_height, c.y_label);
  for (double t : x_axis.ticks())
    s += "<text x=\"" + coord(kLeft + kPlotWidth * x_axis.at(t)) + "\" y=\"" + coord(kTop + plot_height + 16) + "\" text-anchor=\"middle\">" +
         escape(tick(t)) + "</text>\n";
  s += "<text x=\"" + coord(kLeft + kPlotWidth / 2) + "\" y=\"" + coord(kTop + plot_height + 40) + "\" text-anchor=\"middle\">" +
       escape(c.x_label) + "</text>\n";
  for (size_t i = 0; i < c.points.size(); ++i) {
    if (!plottable(xs[i], c.log_x) || !plottable(ys[i], c.log_y)) continue;
    const ScatterPoint& p = c.points[i];
    s += "<circle class=\"dot\" cx=\"" + coord(kLeft + kPlotWidth * x_axis.at(xs[i])) + "\" cy=\"" +
         coord(kTop + plot_height * (1 - y_axis_range.at(ys[i]))) + "\" r=\"3.5\"" + attr("data-label", p.label) +
         attr("data-x", text_of(p.x)) + attr("data-y", text_of(p.y)) + "><title>" +
         escape(p.label + ": " + c.x_label + " " + text_of(p.x) + ", " + c.y_label + " " + text_of(p.y)) + "</title></circle>\n";
  }
  s += "</svg>\n<figcaption>" + std::to_string(shown) + " of " + std::to_string(c.points.size()) + " points" +
       (c.log_x || c.log_y ? "; log scale" : "") + (shown < c.points.size() ? "; the others lack a figure" : "") + "</figcaption>";
  body_ += s + "</figure>\n";
}

void Page::table(const std::vector<std::string>& headers, const std::vector<std::vector<Cell>>& rows, size_t max_rows) {
  std::string s = "<table><thead><tr>";
  for (const auto& h : headers) s += "<th>" + escape(h) + "</th>";
  s += "</tr></thead><tbody>\n";
  for (size_t r = 0; r < rows.size() && r < max_rows; ++r) {
    s += "<tr>";
    for (const Cell& c : rows[r]) {
      s += "<td" + (c.kind.empty() ? std::string() : attr("class", c.kind));
      if (c.value) {
        const std::string exact = text_of(*c.value);
        s += attr("data-value", exact);
        if (exact != c.text) s += attr("title", exact);
      }
      s += ">" + escape(c.text) + "</td>";
    }
    s += "</tr>\n";
  }
  s += "</tbody></table>\n";
  if (rows.size() > max_rows) s += "<p class=\"note\">" + std::to_string(rows.size() - max_rows) + " more rows not shown</p>\n";
  body_ += s;
}

void Page::summary(const nlohmann::json& doc) {
  std::vector<std::vector<Cell>> rows;
  for (const auto& [key, value] : doc.items()) {
    if (value.is_object()) {
      for (const auto& [sub, v] : value.items())
        if (!v.is_structured()) rows.push_back({Cell{key + "." + sub}, figure(v)});
    } else if (!value.is_array()) {
      rows.push_back({Cell{key}, figure(value)});
    }
  }
  table({"figure", "value"}, rows);
}

std::string Page::finish(const nlohmann::json& data) const {
  // In the data block '<' is written \u003c (the same JSON): no "</script>" can end it early.
  std::string json;
  for (char ch : data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) json += ch == '<' ? std::string("\\u003c") : std::string(1, ch);
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + escape(title_) + "</title>\n<style>\n" + kStyle +
         "</style>\n</head>\n<body>\n<h1>" + escape(title_) + "</h1>\n" + body_ +
         "<script type=\"application/json\" id=\"report-data\">" + json + "</script>\n</body>\n</html>\n";
}

}  // namespace onnxtool::cli::html
