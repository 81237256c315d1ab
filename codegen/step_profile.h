// Where a compiled program's time goes. While a StepProfile is installed on
// a thread (ScopedStepProfile), every Program::Run on that thread times each
// of its steps and adds the time to the step's entry: the op its kernel runs
// ("linear", "sdpa_backward", "fused" for an elementwise pass, "copy", "view"),
// with an epilogue named after its kernel ("linear+gelu"). Programs run
// untimed otherwise, at no cost beyond one thread-local read per run.
//
//   codegen::StepProfile profile;
//   {
//     codegen::ScopedStepProfile on(profile);
//     for (int i = 0; i < 10; ++i) step->Run(batch);
//   }
//   for (const auto& [name, entry] : profile.entries()) ...  // entry.seconds, .group
#ifndef TENSORCUT_CODEGEN_STEP_PROFILE_H_
#define TENSORCUT_CODEGEN_STEP_PROFILE_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "graph/ir.h"

namespace tc::codegen {

// What kind of work a step does, for a profile's summary.
enum class StepGroup {
  kProducts,     // matmul, linear, convolutions, with their epilogues
  kAttention,    // sdpa and its backward
  kNorms,        // batch and layer norm, forward and backward
  kElementwise,  // passes over memory: fused regions and lone elementwise ops
  kReductions,   // sums, means, softmax and the like, outside fused passes
  kCopies,       // casts, copies, concat, pad, slice_backward; views (free)
  kOther,        // creation, embedding, dropout, collectives
};
inline constexpr int kNumStepGroups = 7;
absl::string_view StepGroupName(StepGroup group);

// The entry name and group of the step that runs `node` (of a lowered graph).
std::string StepName(const Node& node);
StepGroup StepGroupOf(const Node& node);

class StepProfile {
 public:
  struct Entry {
    StepGroup group = StepGroup::kOther;
    int64_t calls = 0;
    double seconds = 0;
  };
  void Add(const std::string& name, StepGroup group, double seconds);
  // By name.
  const std::map<std::string, Entry>& entries() const { return entries_; }
  double seconds(StepGroup group) const;
  double total_seconds() const;

 private:
  std::map<std::string, Entry> entries_;
};

// Installs `profile` on this thread for the scope's lifetime (nesting
// restores the outer one).
class ScopedStepProfile {
 public:
  explicit ScopedStepProfile(StepProfile& profile);
  ~ScopedStepProfile();
  ScopedStepProfile(const ScopedStepProfile&) = delete;
  ScopedStepProfile& operator=(const ScopedStepProfile&) = delete;

 private:
  StepProfile* saved_;
};

// The profile installed on this thread; null when none.
StepProfile* ActiveStepProfile();

}  // namespace tc::codegen

#endif  // TENSORCUT_CODEGEN_STEP_PROFILE_H_
