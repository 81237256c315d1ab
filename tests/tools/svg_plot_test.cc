// The sweep plot: a well-formed SVG with each series' points in order, on
// axes whose ticks cover them all, a legend, and text escaped.
#include "tools/svg_plot.h"

#include <cstdio>
#include <string>
#include <vector>

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
  REQUIRE(Count(svg, "font-size=\"10\"") == 3);  // each label drawn
  REQUIRE(Count(svg, "<title>b=") == 3);         // and each point's tooltip

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

// The boxes of the labels drawn (font size 10, about 6 px a character).
struct Box {
  double x0, y0, x1, y1;
};
std::vector<Box> LabelBoxes(const std::string& svg) {
  std::vector<Box> boxes;
  const std::string open = "<text x=\"";
  for (size_t at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const size_t end = svg.find("</text>", at);
    const std::string element = svg.substr(at, end - at);
    if (element.find("font-size=\"10\"") == std::string::npos) continue;
    double x = 0, y = 0;
    REQUIRE(std::sscanf(element.c_str(), "<text x=\"%lf\" y=\"%lf\"", &x, &y) == 2);
    const size_t text = element.find('>') + 1;
    boxes.push_back({x, y - 10, x + 6.0 * (element.size() - text), y + 2});
  }
  return boxes;
}

TEST_CASE("SvgPlot keeps labels of different series, and the legend, apart") {
  // Four strategies whose points land on one another, as compare --sweep's do.
  Plot plot{"crowded", "x", "y", {}};
  for (const char* name : {"min_cut", "default", "budget", "milp"}) {
    plot.series.push_back({name, {{1, 1, "0.25"}, {1.01, 1.01, "0.5"}, {3, 3, "1"}}, false});
  }
  const std::string svg = SvgPlot(plot);
  const std::vector<Box> boxes = LabelBoxes(svg);
  // Room is found beside the points in the lower left for every series'
  // merged "0.25-0.5"; the legend leaves none by the upper right's "1".
  REQUIRE(boxes.size() >= 4);
  REQUIRE(Count(svg, ">0.25-0.5</text>") == 4);
  for (size_t i = 0; i < boxes.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      INFO("labels " << j << " and " << i);
      CHECK_FALSE((boxes[i].x0 < boxes[j].x1 && boxes[j].x0 < boxes[i].x1 &&
                   boxes[i].y0 < boxes[j].y1 && boxes[j].y0 < boxes[i].y1));
    }
    // Inside the frame (x 80-530, y 40-320), clear of the legend's rows at the top right.
    CHECK(boxes[i].x0 >= 80);
    CHECK(boxes[i].x1 <= 530);
    CHECK(boxes[i].y0 >= 40);
    CHECK(boxes[i].y1 <= 320);
    CHECK_FALSE((boxes[i].x1 > 440 && boxes[i].y0 < 40 + 12 + 16 * 3 + 8));
  }
  // A label with no free place stays its point's tooltip.
  REQUIRE(Count(svg, "<title>") == 12);
}

}  // namespace
}  // namespace tc
