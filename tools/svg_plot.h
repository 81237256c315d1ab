// A small plot as a standalone SVG file, for what a subcommand measures
// (compare --sweep --plot): axes with round-numbered ticks, axis labels, a
// title, and one or more series, each a colour of its own, its points
// labelled, joined by a line or not, named in a legend.
//
//   Plot plot{"cnn", "planned peak (MB)", "step (ms)", {}};
//   plot.series.push_back({"milp", {{34.9, 18.5, "0.5"}, {39.1, 19.0, "0"}}, /*joined=*/true});
//   plot.series.push_back({"min_cut", {{35.0, 18.8, ""}}, /*joined=*/false});
//   WriteTextFile("cnn.svg", SvgPlot(plot));
#ifndef TENSORCUT_TOOLS_SVG_PLOT_H_
#define TENSORCUT_TOOLS_SVG_PLOT_H_

#include <string>
#include <vector>

namespace tc {

struct PlotPoint {
  double x = 0, y = 0;
  // Drawn beside the point; points of a series drawn over each other share
  // one label, "first-last".
  std::string label;
};

struct PlotSeries {
  std::string name;  // in the legend; a series without one has no entry
  std::vector<PlotPoint> points;
  bool joined = true;  // a line through the points in their order
};

struct Plot {
  std::string title, x_label, y_label;
  std::vector<PlotSeries> series;
};

std::string SvgPlot(const Plot& plot);

}  // namespace tc

#endif  // TENSORCUT_TOOLS_SVG_PLOT_H_
