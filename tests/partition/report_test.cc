// The partition report on a hand-written joint graph whose every number is
// worked out below: saved and activation bytes, recomputed nodes and FLOPs,
// node counts, the backward's peak bytes, the text, JSON and DOT forms.
#include "partition/report.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "graph/verifier.h"
#include "partition/min_cut.h"

namespace tc {
namespace {

using partition::PartitionReport;
using partition::PartitionResult;

// y = relu(x a^T) * w, written out with its backward (f32 throughout):
//
//   primals   x [4,8] 128 B, a [8,8] 256 B, w [8] 32 B; tangent t [4,8] 128 B
//   forward   at = permute(a)   view of a
//             h  = matmul(x, at) [4,8] 128 B, 2*32*8 = 512 FLOPs
//             r  = relu(h)       [4,8] 128 B, 32 FLOPs
//             y  = mul(r, w)     [4,8] 128 B              -> forward output
//   backward  dr   = mul(t, w)          128 B
//             zero = full(0)            4 B
//             pos  = gt(h, zero)        bool [4,8], 32 B
//             dh   = where(pos, dr, zero) 128 B
//             xt   = permute(x)         view of x
//             dat  = matmul(xt, dh)     [8,8] 256 B
//             da   = permute(dat)       view of dat        -> gradient of a
//             atT  = permute(at)        view of a
//             dx   = matmul(dh, atT)    128 B              -> gradient of x
//             tr   = mul(t, r)          128 B
//             dw   = sum(tr, dims 0)    [8] 32 B           -> gradient of w
struct HandJoint {
  Graph graph;
  JointLayout layout{3, 1, 1, {0, 1, 2}};  // x a w; t; y; dx da dw

  Value* Get(const std::string& name) const { return graph.FindValue(name); }
};

HandJoint MakeHandJoint() {
  HandJoint j;
  Graph& g = j.graph;
  const TensorType vec{DType::kF32, {4, 8}};
  Value* x = g.AddPlaceholder("x", vec);
  Value* a = g.AddPlaceholder("a", {DType::kF32, {8, 8}});
  Value* w = g.AddPlaceholder("w", {DType::kF32, {8}});
  Value* t = g.AddPlaceholder("t", vec);
  auto add = [&](const std::string& name, OpKind op, std::vector<Value*> in, Attrs attrs = {}) {
    absl::StatusOr<std::vector<Value*>> r = g.AddNode(op, in, attrs, "", {name});
    INFO(r.status().message());
    REQUIRE(r.ok());
    return (*r)[0];
  };
  const Attrs transpose{{"dims", std::vector<int64_t>{1, 0}}};
  Value* at = add("at", OpKind::kPermute, {a}, transpose);
  Value* h = add("h", OpKind::kMatmul, {x, at});
  Value* r = add("r", OpKind::kRelu, {h});
  Value* y = add("y", OpKind::kMul, {r, w});
  Value* dr = add("dr", OpKind::kMul, {t, w});
  Value* zero = add("zero", OpKind::kFull, {},
                    {{"dtype", DType::kF32}, {"shape", std::vector<int64_t>{}}, {"value", 0.0}});
  Value* pos = add("pos", OpKind::kGt, {h, zero});
  Value* dh = add("dh", OpKind::kWhere, {pos, dr, zero});
  Value* xt = add("xt", OpKind::kPermute, {x}, transpose);
  Value* dat = add("dat", OpKind::kMatmul, {xt, dh});
  Value* da = add("da", OpKind::kPermute, {dat}, transpose);
  Value* att = add("atT", OpKind::kPermute, {at}, transpose);
  Value* dx = add("dx", OpKind::kMatmul, {dh, att});
  Value* tr = add("tr", OpKind::kMul, {t, r});
  Value* dw =
      add("dw", OpKind::kSum, {tr}, {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}});
  REQUIRE(g.SetOutputs({y, dx, da, dw}).ok());
  REQUIRE(Verify(g).ok());
  return j;
}

PartitionResult Assemble(const HandJoint& j, const std::vector<std::string>& saved) {
  std::vector<Value*> values;
  for (const std::string& name : saved) values.push_back(j.Get(name));
  absl::StatusOr<PartitionResult> part = partition::AssemblePartition(j.graph, j.layout, values);
  INFO(part.status().message());
  REQUIRE(part.ok());
  return *std::move(part);
}

std::vector<std::string> SavedLines(const PartitionReport& r) {
  std::vector<std::string> out;
  for (const partition::SavedValueReport& s : r.saved) {
    out.push_back(absl::StrCat(s.name, " ", s.op, " ", s.type.ToString(), " ", s.bytes, " ",
                               s.is_activation ? "activation" : "input"));
  }
  return out;
}

TEST_CASE("report of the default partition: everything the backward reads is saved") {
  const HandJoint j = MakeHandJoint();
  absl::StatusOr<PartitionResult> part = partition::DefaultPartition(j.graph, j.layout);
  REQUIRE(part.ok());
  const PartitionReport r = partition::MakeReport(j.graph, j.layout, *part);
  // The backward reads x (xt), w (dr), at (atT), h (pos) and r (tr): primals
  // first, then node results in graph order. at is a view of the primal a,
  // so only h and r are activations.
  CHECK(SavedLines(r) == std::vector<std::string>{
                             "x input f32[4,8] 128 input", "w input f32[8] 32 input",
                             "at permute f32[8,8] 256 input", "h matmul f32[4,8] 128 activation",
                             "r relu f32[4,8] 128 activation"});
  CHECK(r.saved_bytes == 128 + 32 + 256 + 128 + 128);
  CHECK(r.saved_activation_bytes == 128 + 128);
  CHECK(r.recomputed_nodes == 0);
  CHECK(r.recompute_flops == 0);
  CHECK(r.fw_nodes == 4);   // at h r y
  CHECK(r.bw_nodes == 11);  // dr zero pos dh xt dat da atT dx tr dw
  // Inputs x w at h r t: 672 + 128 = 800 B, live throughout. Then, live
  // after each node: dr 128, zero 132, pos 164, dh 292 (dr, zero, pos
  // freed: 128), xt 128 (a view), dat 384, da 384 (a view; dat now lives
  // to the end), atT 384, dx 512 (dh freed: 384), tr 512, dw 544.
  CHECK(r.bw_peak_bytes == 800 + 544);
}

TEST_CASE("report of a partition that recomputes a view and a relu") {
  const HandJoint j = MakeHandJoint();
  const PartitionResult part = Assemble(j, {"x", "a", "w", "h"});
  PartitionReport r = partition::MakeReport(j.graph, j.layout, part);
  CHECK(SavedLines(r) ==
        std::vector<std::string>{"x input f32[4,8] 128 input", "a input f32[8,8] 256 input",
                                 "w input f32[8] 32 input", "h matmul f32[4,8] 128 activation"});
  CHECK(r.saved_bytes == 544);
  CHECK(r.saved_activation_bytes == 128);
  CHECK(r.recomputed_nodes == 2);  // at = permute(a) (0 FLOPs) and r = relu(h) (32)
  CHECK(r.recompute_flops == 32);
  CHECK(r.fw_nodes == 4);
  CHECK(r.bw_nodes == 13);
  // Inputs x a w h t: 672 B. Live after each node: at 0 (a view), r 128,
  // dr 256, zero 260, pos 292, dh 420 (then 256), xt 256, dat 512, da 512,
  // atT 512, dx 640 (dh freed: 512), tr 640 (r freed: 512), dw 544.
  CHECK(r.bw_peak_bytes == 672 + 640);

  CHECK(partition::ReportText(r) ==
        "saved value  op      shape  dtype       bytes  activation\n"
        "%x           input   [4,8]  f32         128 B  no\n"
        "%a           input   [8,8]  f32         256 B  no\n"
        "%w           input   [8]    f32          32 B  no\n"
        "%h           matmul  [4,8]  f32         128 B  yes\n"
        "saved: 4 values, 544 B (activations 128 B)\n"
        "recomputed in the backward: 2 nodes, 32 FLOP\n"
        "forward 4 nodes, backward 13 nodes, backward peak 1.31 kB\n");
  CHECK(partition::ReportJson(r) ==
        "{\"saved_bytes\":544,\"saved_bytes_formula\":\"544\",\"saved_activation_bytes\":128,"
        "\"saved_values\":["
        "{\"name\":\"x\",\"op\":\"input\",\"shape\":[4,8],\"dtype\":\"f32\",\"bytes\":128,"
        "\"activation\":false},"
        "{\"name\":\"a\",\"op\":\"input\",\"shape\":[8,8],\"dtype\":\"f32\",\"bytes\":256,"
        "\"activation\":false},"
        "{\"name\":\"w\",\"op\":\"input\",\"shape\":[8],\"dtype\":\"f32\",\"bytes\":32,"
        "\"activation\":false},"
        "{\"name\":\"h\",\"op\":\"matmul\",\"shape\":[4,8],\"dtype\":\"f32\",\"bytes\":128,"
        "\"activation\":true}],"
        "\"recomputed_nodes\":2,\"recompute_flops\":32.0,\"fw_nodes\":4,\"bw_nodes\":13,"
        "\"bw_peak_bytes\":1312,\"measured_peak_bytes\":null}");
  r.measured_peak_bytes = 4096;
  CHECK(absl::EndsWith(partition::ReportText(r),
                       "backward peak 1.31 kB\ncompiled step: planned peak 4.10 kB\n"));
  CHECK(absl::EndsWith(partition::ReportJson(r), ",\"measured_peak_bytes\":4096}"));
}

TEST_CASE("the min-cut partition of the hand graph saves 544 bytes, 128 of them activations") {
  // h cannot be recomputed (matmul); x and w are read as they are; the
  // backward needs a or its view at (256 B either way, a tie); r = relu(h)
  // is recomputed.
  const HandJoint j = MakeHandJoint();
  absl::StatusOr<PartitionResult> part = partition::MinCutPartition(j.graph, j.layout);
  REQUIRE(part.ok());
  const PartitionReport r = partition::MakeReport(j.graph, j.layout, *part);
  CHECK(r.saved_bytes == 544);
  CHECK(r.saved_activation_bytes == 128);
}

TEST_CASE("ReportJson escapes quotes, backslashes and control characters") {
  PartitionReport r;
  r.saved.push_back({"a\"b\\c\nd\x01", "input", {DType::kBool, {}}, 1, false});
  r.recompute_flops = 1.5;
  CHECK(partition::ReportJson(r) ==
        "{\"saved_bytes\":0,\"saved_bytes_formula\":\"\",\"saved_activation_bytes\":0,\"saved_"
        "values\":["
        "{\"name\":\"a\\\"b\\\\c\\nd\\u0001\",\"op\":\"input\",\"shape\":[],\"dtype\":\"bool\","
        "\"bytes\":1,\"activation\":false}],"
        "\"recomputed_nodes\":0,\"recompute_flops\":1.5,\"fw_nodes\":0,\"bw_nodes\":0,"
        "\"bw_peak_bytes\":0,\"measured_peak_bytes\":null}");
}

TEST_CASE("JointDot colours both sides, outlines saved values and marks recomputed nodes") {
  const HandJoint j = MakeHandJoint();
  const PartitionResult part = Assemble(j, {"x", "a", "w", "h"});
  const std::string dot = partition::JointDot(j.graph, j.layout, part);
  INFO(dot);
  CHECK(absl::StartsWith(dot, "digraph joint {\n"));
  CHECK(absl::EndsWith(dot, "}\n"));
  // Placeholders p0..p3, nodes n0..n14 in graph order.
  const std::string saved = absl::StrCat(", color=", partition::kDotSavedBorder, ", penwidth=3");
  const std::string forward = absl::StrCat("fillcolor=", partition::kDotForwardFill);
  const std::string backward = absl::StrCat("fillcolor=", partition::kDotBackwardFill);
  const std::string primal = absl::StrCat("fillcolor=", partition::kDotPrimalFill);
  const std::string dashed = ", style=\"filled,dashed\"";
  for (const std::string& line : {
           absl::StrCat("  p0 [shape=ellipse, label=\"%x\\nsaved\", ", primal, saved, "];"),
           absl::StrCat("  p1 [shape=ellipse, label=\"%a\\nsaved\", ", primal, saved, "];"),
           absl::StrCat("  p2 [shape=ellipse, label=\"%w\\nsaved\", ", primal, saved, "];"),
           absl::StrCat("  p3 [shape=ellipse, label=\"%t\", fillcolor=", partition::kDotTangentFill,
                        "];"),
           absl::StrCat("  n0 [label=\"permute %at\\nrecomputed\", ", forward, dashed, "];"),
           absl::StrCat("  n1 [label=\"matmul %h\\nsaved\", ", forward, saved, "];"),
           absl::StrCat("  n2 [label=\"relu %r\\nrecomputed\", ", forward, dashed, "];"),
           absl::StrCat("  n3 [label=\"mul %y\", ", forward, "];"),
           absl::StrCat("  n4 [label=\"mul %dr\", ", backward, "];"),
           absl::StrCat("  n5 [label=\"full %zero\", ", backward, "];"),
           absl::StrCat("  n6 [label=\"gt %pos\", ", backward, "];"),
           absl::StrCat("  n7 [label=\"where %dh\", ", backward, "];"),
           absl::StrCat("  n8 [label=\"permute %xt\", ", backward, "];"),
           absl::StrCat("  n9 [label=\"matmul %dat\", ", backward, "];"),
           absl::StrCat("  n10 [label=\"permute %da\", ", backward, "];"),
           absl::StrCat("  n11 [label=\"permute %atT\", ", backward, "];"),
           absl::StrCat("  n12 [label=\"matmul %dx\", ", backward, "];"),
           absl::StrCat("  n13 [label=\"mul %tr\", ", backward, "];"),
           absl::StrCat("  n14 [label=\"sum %dw\", ", backward, "];"),
           std::string("  p1 -> n0 [label=\"f32[8,8]\"];"),
           std::string("  n1 -> n6 [label=\"f32[4,8]\"];"),
           std::string("  n5 -> n7 [label=\"f32[]\"];"),
           std::string("  n6 -> n7 [label=\"bool[4,8]\"];"),
       }) {
    CHECK(absl::StrContains(dot, absl::StrCat(line, "\n")));
  }
  int edges = 0;
  for (const Node* n : j.graph.nodes()) edges += n->num_inputs();
  int arrows = 0;
  for (size_t at = dot.find("->"); at != std::string::npos; at = dot.find("->", at + 2)) ++arrows;
  CHECK(arrows == edges);
}

}  // namespace
}  // namespace tc
