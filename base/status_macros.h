// Early returns on error, for functions that return absl::Status or
// absl::StatusOr<T>:
//
//   absl::StatusOr<Graph> Load(absl::string_view path) {
//     TC_ASSIGN_OR_RETURN(std::string text, ReadFile(path));  // declares `text`
//     TC_ASSIGN_OR_RETURN(Graph graph, Parse(text));
//     TC_RETURN_IF_ERROR(Verify(graph));
//     return graph;
//   }
//
// TC_RETURN_IF_ERROR(expr) returns the absl::Status `expr` gives when it is
// not OK. TC_ASSIGN_OR_RETURN(lhs, expr) evaluates the absl::StatusOr `expr`
// once, returns its status when it is not OK, and otherwise moves its value
// into `lhs`: a declaration (`auto x`, `Graph g`) or an existing variable. A
// type with a comma in it needs a `using` alias or `auto`. It expands to
// several statements: never the body of an unbraced if or loop.
#ifndef TENSORCUT_BASE_STATUS_MACROS_H_
#define TENSORCUT_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TC_RETURN_IF_ERROR(expr)                                            \
  do {                                                                      \
    if (::absl::Status tc_status_macro_ = (expr); !tc_status_macro_.ok()) { \
      return tc_status_macro_;                                              \
    }                                                                       \
  } while (false)

#define TC_ASSIGN_OR_RETURN(lhs, expr) \
  TC_ASSIGN_OR_RETURN_IMPL_(TC_STATUS_MACRO_CONCAT_(tc_statusor_, __LINE__), lhs, expr)

#define TC_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)     \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = *std::move(statusor)

#define TC_STATUS_MACRO_CONCAT_(a, b) TC_STATUS_MACRO_CONCAT_INNER_(a, b)
#define TC_STATUS_MACRO_CONCAT_INNER_(a, b) a##b

#endif  // TENSORCUT_BASE_STATUS_MACROS_H_
