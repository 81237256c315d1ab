// The sweep plot: a well-formed SVG with each series' points in order, on
// axes whose ticks cover them all, a legend, and text escaped.
#include "tools/svg_plot.h"

#include <string>

#include "catch2/catch.hpp"

namespace tc {
namespace {

int Count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST_CASE("SvgPlot draws every point, joined in order, with labels and axes") {
  Plot plot{"sweep <mlp>", "saved (MB)", "recomputed (MFLOP)", {}};
  plot.series = {{"", {{0, 2, "b=0"}, {1, 1, "b=0.5"}, {2, 0, "b=1"}}}};
  const std::string svg = SvgPlot(plot);
  REQUIRE(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  REQUIRE(svg.substr(svg.size() - 7) == "</svg>\n");
  REQUIRE(Count(svg, "<circle") == 3);
  REQUIRE(Count(svg, "<polyline") == 1);
  REQUIRE(svg.find(">sweep &lt;mlp&gt;</text>") != std::string::npos);
  REQUIRE(svg.find(">saved (MB)</text>") != std::string::npos);
  REQUIRE(svg.find(">recomputed (MFLOP)</text>") != std::string::npos);
  REQUIRE(Count(svg, ">b=") == 3);

  // Both axes run 0, 0.5, ..., 2: x from 80 to 530 (margins 80 and 30 of
  // 560), y from 320 up to 40 (margins 40 and 60 of 380).
  REQUIRE(Count(svg, ">1.5</text>") == 2);
  REQUIRE(svg.find("<polyline points=\"80.0,40.0 305.0,180.0 530.0,320.0\"") != std::string::npos);
}

TEST_CASE("SvgPlot labels points drawn over each other once, as a range") {
  Plot plot{"flat", "x", "y", {{"", {{1, 0, "a"}, {1, 0, "b"}, {1, 0, "c"}}}}};
  const std::string svg = SvgPlot(plot);
  REQUIRE(Count(svg, "<circle") == 3);
  REQUIRE(Count(svg, "font-size=\"10\"") == 1);
  REQUIRE(svg.find(">a-c</text>") != std::string::npos);
  REQUIRE(svg.find("nan") == std::string::npos);
}

TEST_CASE("SvgPlot draws each series in its colour, joined or not, named in a legend") {
  Plot plot{"two", "x", "y", {}};
  plot.series.push_back({"frontier", {{0, 0, "0"}, {4, 4, "1"}}, /*joined=*/true});
  plot.series.push_back({"one <point>", {{2, 1, ""}}, /*joined=*/false});
  const std::string svg = SvgPlot(plot);
  REQUIRE(Count(svg, "<polyline") == 1);
  REQUIRE(Count(svg, "<circle") == 3 + 2);  // the points, then a swatch per series
  REQUIRE(Count(svg, "fill=\"#0072b2\"") == 3);
  REQUIRE(Count(svg, "fill=\"#d55e00\"") == 2);
  REQUIRE(svg.find("stroke=\"#0072b2\"") != std::string::npos);
  REQUIRE(svg.find(">frontier</text>") != std::string::npos);
  REQUIRE(svg.find(">one &lt;point&gt;</text>") != std::string::npos);
  // The axes cover every series: x and y from 0 to 4.
  REQUIRE(svg.find("<polyline points=\"80.0,320.0 530.0,40.0\"") != std::string::npos);
}

}  // namespace
}  // namespace tc
