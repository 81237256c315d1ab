// A small line plot as a standalone SVG file, for curves a subcommand
// measures (compare --sweep --plot): axes with round-numbered ticks, axis
// labels and a title, the points joined by a line, each point labelled.
//
//   Plot plot{"budget sweep: mlp", "saved activations (MB)", "recomputed (MFLOP)", {}};
//   plot.points.push_back({1.05, 0.0, "1"});
//   WriteTextFile("sweep.svg", SvgPlot(plot));
#ifndef TENSORCUT_TOOLS_SVG_PLOT_H_
#define TENSORCUT_TOOLS_SVG_PLOT_H_

#include <string>
#include <vector>

namespace tc {

struct PlotPoint {
  double x = 0, y = 0;
  // Drawn beside the point; points drawn over each other share one label,
  // "first-last".
  std::string label;
};

struct Plot {
  std::string title, x_label, y_label;
  std::vector<PlotPoint> points;  // joined in this order
};

std::string SvgPlot(const Plot& plot);

}  // namespace tc

#endif  // TENSORCUT_TOOLS_SVG_PLOT_H_
