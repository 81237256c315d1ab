#include "tools/svg_plot.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tc {
namespace {

constexpr double kWidth = 560, kHeight = 380;
constexpr double kLeft = 80, kRight = 30, kTop = 40, kBottom = 60;  // margins
// A series' colour, by its place in the plot (a palette told apart also in
// the common colour-vision deficiencies).
constexpr std::array<const char*, 6> kColours = {"#0072b2", "#d55e00", "#009e73",
                                                 "#cc79a7", "#e69f00", "#56b4e9"};

// Text for SVG: the XML special characters escaped.
std::string Xml(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A text's extent in pixels, for keeping labels apart: Helvetica's
// characters average about 0.6 of the font size.
double TextWidth(const std::string& text, double font_size) {
  return 0.6 * font_size * static_cast<double>(text.size());
}

struct Box {
  double x0, y0, x1, y1;
  bool Overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

// An axis range: [lo, hi] widened to multiples of a 1, 2 or 5 times a power
// of ten `step`, about five ticks apart.
struct Axis {
  double lo, hi, step;
};

Axis MakeAxis(double lo, double hi) {
  const bool non_negative = lo >= 0;
  if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {  // one value: a unit around it
    lo -= std::max(0.5, std::abs(lo) * 0.1);
    hi += std::max(0.5, std::abs(hi) * 0.1);
  }
  if (non_negative) lo = std::max(0.0, lo);
  const double raw = (hi - lo) / 5, magnitude = std::pow(10, std::floor(std::log10(raw)));
  const double step = raw / magnitude <= 1   ? magnitude
                      : raw / magnitude <= 2 ? 2 * magnitude
                      : raw / magnitude <= 5 ? 5 * magnitude
                                             : 10 * magnitude;
  return {std::floor(lo / step) * step, std::ceil(hi / step) * step, step};
}

}  // namespace

std::string SvgPlot(const Plot& plot) {
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  bool first = true;
  for (const PlotSeries& series : plot.series) {
    for (const PlotPoint& p : series.points) {
      if (first) {
        x_lo = x_hi = p.x, y_lo = y_hi = p.y, first = false;
      }
      x_lo = std::min(x_lo, p.x), x_hi = std::max(x_hi, p.x);
      y_lo = std::min(y_lo, p.y), y_hi = std::max(y_hi, p.y);
    }
  }
  const Axis ax = MakeAxis(x_lo, x_hi), ay = MakeAxis(y_lo, y_hi);
  const double w = kWidth - kLeft - kRight, h = kHeight - kTop - kBottom;
  auto sx = [&](double x) { return kLeft + (x - ax.lo) / (ax.hi - ax.lo) * w; };
  auto sy = [&](double y) { return kTop + h - (y - ay.lo) / (ay.hi - ay.lo) * h; };

  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">%s</text>\n",
      kWidth, kHeight, kWidth / 2, Xml(plot.title));
  // Ticks with grid lines, then the axes over them.
  for (double t = ax.lo; t <= ax.hi + ax.step / 2; t += ax.step) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g</text>\n",
                          sx(t), kTop, sx(t), kTop + h, sx(t), kTop + h + 18, t);
  }
  for (double t = ay.lo; t <= ay.hi + ay.step / 2; t += ay.step) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                          kLeft, sy(t), kLeft + w, sy(t), kLeft - 6, sy(t) + 4, t);
  }
  absl::StrAppendFormat(&svg,
                        "<path d=\"M%.0f %.0f V%.0f H%.0f\" fill=\"none\" stroke=\"black\"/>\n"
                        "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n"
                        "<text transform=\"translate(18 %.0f) rotate(-90)\" "
                        "text-anchor=\"middle\">%s</text>\n",
                        kLeft, kTop, kTop + h, kLeft + w, kLeft + w / 2, kHeight - 16,
                        Xml(plot.x_label), kTop + h / 2, Xml(plot.y_label));

  // The legend, top right: a swatch and the name per named series.
  struct Entry {
    const char* colour;
    const std::string* name;
    double y;
  };
  std::vector<Entry> legend;
  std::vector<Box> taken;  // what labels must not cover: the legend, then placed labels
  for (size_t i = 0; i < plot.series.size(); ++i) {
    if (plot.series[i].name.empty()) continue;
    const double y = kTop + 12 + 16 * legend.size();
    legend.push_back({kColours[i % kColours.size()], &plot.series[i].name, y});
    const double right = kLeft + w - 4;
    taken.push_back({right - 12 - TextWidth(plot.series[i].name, 12), y - 8, right, y + 8});
  }

  // Points, each with its label as a tooltip; a point drawn over an earlier
  // labelled one of its series extends that label to a range ("0.1-0.9").
  struct Label {
    double x, y;  // the point, in pixels
    std::string text;
  };
  std::vector<Label> labels;
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const PlotSeries& series = plot.series[i];
    const char* colour = kColours[i % kColours.size()];
    if (series.joined) {
      std::string line;
      for (const PlotPoint& p : series.points) {
        absl::StrAppendFormat(&line, "%s%.1f,%.1f", line.empty() ? "" : " ", sx(p.x), sy(p.y));
      }
      absl::StrAppendFormat(&svg,
                            "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" "
                            "stroke-width=\"2\"/>\n",
                            line, colour);
    }
    const size_t first_label = labels.size();
    std::vector<std::string> last(series.points.size());
    for (const PlotPoint& p : series.points) {
      absl::StrAppendFormat(&svg, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\">", sx(p.x),
                            sy(p.y), colour);
      if (!p.label.empty()) absl::StrAppend(&svg, "<title>", Xml(p.label), "</title>");
      absl::StrAppend(&svg, "</circle>\n");
      if (p.label.empty()) continue;
      auto covered = std::find_if(labels.begin() + first_label, labels.end(), [&](const Label& l) {
        return std::abs(l.x - sx(p.x)) < 24 && std::abs(l.y - sy(p.y)) < 14;
      });
      if (covered == labels.end()) {
        labels.push_back({sx(p.x), sy(p.y), p.label});
        last[labels.size() - 1 - first_label] = p.label;
      } else {
        last[covered - labels.begin() - first_label] = p.label;
      }
    }
    for (size_t l = first_label; l < labels.size(); ++l) {
      const std::string& end = last[l - first_label];
      if (end != labels[l].text) labels[l].text = absl::StrCat(labels[l].text, "-", end);
    }
  }

  // Each label beside its point where it covers no other label, the legend
  // or the frame: above right, below right, above left, below left, right,
  // left, then rows further up and down (up to five rows away); a label
  // with no free place is left to its point's tooltip.
  constexpr double kLabelFont = 10, kRow = 12;
  for (const Label& l : labels) {
    const double width = TextWidth(l.text, kLabelFont);
    std::vector<std::array<double, 2>> offsets;
    for (int row = 0; row <= 5; ++row) {
      const double up = -6 - row * kRow, down = 14 + row * kRow;
      for (const double dx : {6.0, -6 - width}) {
        offsets.push_back({dx, up});
        offsets.push_back({dx, down});
      }
      if (row == 0) {
        offsets.push_back({8, 4});
        offsets.push_back({-8 - width, 4});
      }
    }
    for (const auto& offset : offsets) {
      const double x = l.x + offset[0], baseline = l.y + offset[1];
      const Box box{x, baseline - kLabelFont, x + width, baseline + 2};
      if (box.x0 < kLeft || box.x1 > kLeft + w || box.y0 < kTop || box.y1 > kTop + h) continue;
      if (std::any_of(taken.begin(), taken.end(), [&](const Box& b) { return b.Overlaps(box); })) {
        continue;
      }
      taken.push_back(box);
      absl::StrAppendFormat(
          &svg, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#555\">%s</text>\n", x,
          baseline, Xml(l.text));
      break;
    }
  }
  for (const Entry& e : legend) {
    absl::StrAppendFormat(&svg,
                          "<circle cx=\"%.0f\" cy=\"%.0f\" r=\"4\" fill=\"%s\"/>"
                          "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>\n",
                          kLeft + w - 8, e.y, e.colour, kLeft + w - 16, e.y + 4, Xml(*e.name));
  }
  return svg + "</svg>\n";
}

}  // namespace tc
