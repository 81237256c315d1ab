#include "graph/parser.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/symbolic.h"

namespace tc {
namespace {

bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == '.'; }
bool IsNumberChar(char c) {
  return absl::ascii_isalnum(c) || c == '.' || c == '-' || c == '+' || c == '*';
}
bool IsDimChar(char c) { return absl::ascii_isalnum(c) || c == '-' || c == '+' || c == '*'; }

// A declared result or placeholder: "%name: type" or "%name: type:nhwc",
// with where it started.
struct Decl {
  size_t pos;
  std::string name;
  size_t type_pos;
  TensorType type;
  DimOrder layout;
};

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<Graph> Run() {
    TC_ASSIGN_OR_RETURN(Graph graph, ParseGraph());
    SkipSpace();
    if (pos_ != text_.size()) return Expected("end of input");
    return graph;
  }

 private:
  // A parser for the graph at `pos` of `text`: a region op's body.
  Parser(absl::string_view text, size_t pos) : text_(text), pos_(pos), in_body_(true) {}

  // "graph(%x: f32[2], ...) { nodes; return (...) }"
  absl::StatusOr<Graph> ParseGraph() {
    TC_RETURN_IF_ERROR(ExpectWord("graph"));
    TC_RETURN_IF_ERROR(Expect('('));
    if (!Consume(')')) {
      do {
        TC_ASSIGN_OR_RETURN(Decl d, Declaration());
        TC_RETURN_IF_ERROR(CheckNew(d));
        Value* p = graph_.AddPlaceholder(d.name, d.type);
        graph_.SetLayout(p, d.layout);
        values_[d.name] = p;
      } while (Consume(','));
      TC_RETURN_IF_ERROR(Expect(')'));
    }
    TC_RETURN_IF_ERROR(Expect('{'));
    while (true) {
      SkipSpace();
      if (Word() == "return") break;
      if (Peek() != '%') return Expected("'%' or 'return'");
      TC_RETURN_IF_ERROR(NodeLine());
    }
    TC_RETURN_IF_ERROR(ExpectWord("return"));
    TC_ASSIGN_OR_RETURN(std::vector<Value*> outputs, ValueList());
    TC_RETURN_IF_ERROR(graph_.SetOutputs(std::move(outputs)));
    TC_RETURN_IF_ERROR(Expect('}'));
    return std::move(graph_);
  }

  // "%a: f32[2], %b: f32[] = op(%x, %y) {attrs}  # source", and for a region
  // op "%a: f32[2] = op(%x) {  # source", its body, "}".
  absl::Status NodeLine() {
    std::vector<Decl> results;
    do {
      TC_ASSIGN_OR_RETURN(Decl d, Declaration());
      TC_RETURN_IF_ERROR(CheckNew(d));
      for (const Decl& r : results) {
        if (r.name == d.name) return ErrorAt(d.pos, "value '%", d.name, "' is already defined");
      }
      results.push_back(std::move(d));
    } while (Consume(','));
    TC_RETURN_IF_ERROR(Expect('='));
    SkipSpace();
    const size_t op_pos = pos_;
    TC_ASSIGN_OR_RETURN(std::string op_name, Name("op name"));
    absl::StatusOr<OpKind> op = OpKindFromName(op_name);
    if (!op.ok()) return ErrorAt(op_pos, "unknown op '", op_name, "'");
    TC_ASSIGN_OR_RETURN(std::vector<Value*> inputs, ValueList());
    std::vector<std::string> names;
    for (const Decl& r : results) names.push_back(r.name);
    absl::StatusOr<std::vector<Value*>> out;
    if (GetOpDef(*op).Has(kTraitRegion)) {
      if (in_body_) return ErrorAt(op_pos, "a region's body cannot hold ", op_name);
      TC_RETURN_IF_ERROR(Expect('{'));
      const std::string source = Comment();
      Parser body_parser(text_, pos_);
      TC_ASSIGN_OR_RETURN(Graph body, body_parser.ParseGraph());
      pos_ = body_parser.pos_;
      TC_RETURN_IF_ERROR(Expect('}'));
      out = graph_.AddRegionNode(*op, inputs, std::move(body), source, names);
    } else {
      Attrs attrs;
      SkipSpace();
      if (Peek() == '{') TC_RETURN_IF_ERROR(AttrList(attrs));
      out = graph_.AddNode(*op, inputs, std::move(attrs), Comment(), names);
    }
    if (!out.ok()) return ErrorAt(op_pos, out.status().message());
    for (size_t i = 0; i < results.size(); ++i) {
      Value* v = (*out)[i];
      if (v->type() != results[i].type) {
        return ErrorAt(results[i].type_pos, "%", v->name(), " declared ",
                       results[i].type.ToString(), ", but ", op_name, " infers ",
                       v->type().ToString());
      }
      graph_.SetLayout(v, results[i].layout);
      values_[v->name()] = v;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Decl> Declaration() {
    SkipSpace();
    Decl d{pos_, "", 0, {}, {}};
    TC_RETURN_IF_ERROR(Expect('%'));
    TC_ASSIGN_OR_RETURN(d.name, Name("value name"));
    TC_RETURN_IF_ERROR(Expect(':'));
    SkipSpace();
    d.type_pos = pos_;
    TC_ASSIGN_OR_RETURN(d.type, Type());
    if (Peek() == ':') {
      ++pos_;
      TC_RETURN_IF_ERROR(ExpectWord("nhwc"));
      d.layout = kChannelsLast;
    }
    return d;
  }

  absl::Status CheckNew(const Decl& d) {
    if (values_.contains(d.name)) return ErrorAt(d.pos, "value '%", d.name, "' is already defined");
    return absl::OkStatus();
  }

  // "f32[4,3]", "bool[]".
  absl::StatusOr<TensorType> Type() {
    SkipSpace();
    const size_t start = pos_;
    TC_ASSIGN_OR_RETURN(std::string dtype_name, Name("dtype"));
    absl::StatusOr<DType> dtype = ParseDType(dtype_name);
    if (!dtype.ok()) return ErrorAt(start, dtype.status().message());
    TensorType type{*dtype, {}};
    TC_RETURN_IF_ERROR(Expect('['));
    if (Consume(']')) return type;
    do {
      SkipSpace();
      const size_t dim_pos = pos_;
      // A number or a symbolic expression: "784", "s0", "784*s0".
      std::string word;
      while (pos_ < text_.size() && IsDimChar(text_[pos_])) word += text_[pos_++];
      if (word.empty()) return Expected("dimension");
      absl::StatusOr<int64_t> dim = ParseDim(word);
      if (!dim.ok()) return ErrorAt(dim_pos, dim.status().message());
      type.shape.push_back(*dim);
    } while (Consume(','));
    TC_RETURN_IF_ERROR(Expect(']'));
    if (absl::Status s = CheckShapeSize(type.shape); !s.ok()) return ErrorAt(start, s.message());
    return type;
  }

  // "(%a, %b)" of defined values.
  absl::StatusOr<std::vector<Value*>> ValueList() {
    std::vector<Value*> values;
    TC_RETURN_IF_ERROR(Expect('('));
    if (Consume(')')) return values;
    do {
      SkipSpace();
      const size_t start = pos_;
      TC_RETURN_IF_ERROR(Expect('%'));
      TC_ASSIGN_OR_RETURN(std::string name, Name("value name"));
      auto it = values_.find(name);
      if (it == values_.end()) return ErrorAt(start, "unknown value '%", name, "'");
      values.push_back(it->second);
    } while (Consume(','));
    TC_RETURN_IF_ERROR(Expect(')'));
    return values;
  }

  // "{name=value, ...}"
  absl::Status AttrList(Attrs& attrs) {
    TC_RETURN_IF_ERROR(Expect('{'));
    if (Consume('}')) return absl::OkStatus();
    do {
      SkipSpace();
      const size_t start = pos_;
      TC_ASSIGN_OR_RETURN(std::string name, Name("attribute name"));
      if (attrs.Has(name)) return ErrorAt(start, "attribute '", name, "' given twice");
      TC_RETURN_IF_ERROR(Expect('='));
      TC_ASSIGN_OR_RETURN(AttrValue value, AttrVal());
      attrs.Set(std::move(name), std::move(value));
    } while (Consume(','));
    if (!Consume('}')) return Expected("',' or '}'");
    return absl::OkStatus();
  }

  // An int, a float, a bool, an int list "[1,-2]", a dtype or a "string".
  absl::StatusOr<AttrValue> AttrVal() {
    SkipSpace();
    const size_t start = pos_;
    if (Consume('[')) {
      std::vector<int64_t> ints;
      if (Consume(']')) return AttrValue(ints);
      do {
        SkipSpace();
        const size_t item = pos_;
        // Checked before parsing the item: lists never nest, and a deep
        // nesting would recurse without bound.
        if (Peek() == '[') return ErrorAt(item, "a list attribute holds integers only");
        TC_ASSIGN_OR_RETURN(AttrValue v, AttrVal());
        if (!std::holds_alternative<int64_t>(v)) {
          return ErrorAt(item, "a list attribute holds integers only");
        }
        ints.push_back(std::get<int64_t>(v));
      } while (Consume(','));
      TC_RETURN_IF_ERROR(Expect(']'));
      return AttrValue(ints);
    }
    if (Peek() == '"') {
      const size_t end = text_.find_first_of("\"\n", pos_ + 1);
      if (end == absl::string_view::npos || text_[end] != '"') {
        return ErrorAt(start, "unterminated string");
      }
      std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
      pos_ = end + 1;
      return AttrValue(std::move(s));
    }
    std::string word;
    while (pos_ < text_.size() && IsNumberChar(text_[pos_])) word += text_[pos_++];
    if (word.empty()) return Expected("attribute value");
    if (word == "true" || word == "false") return AttrValue(word == "true");
    if (absl::StatusOr<DType> d = ParseDType(word); d.ok()) return AttrValue(*d);
    const bool integral = word.find_first_not_of("-0123456789") == std::string::npos;
    int64_t i;
    double f;
    if (integral && absl::SimpleAtoi(word, &i)) {
      // Numbers that low are symbolic dims' handles (graph/symbolic.h).
      if (IsSymbolic(i)) return ErrorAt(start, "number '", word, "' out of range");
      return AttrValue(i);
    }
    // A symbolic size ("s0", "784*s0"); no float spells an 's' or a '*'.
    if (word.find_first_of("s*") != std::string::npos) {
      absl::StatusOr<int64_t> dim = ParseDim(word);
      if (!dim.ok()) return ErrorAt(start, dim.status().message());
      return AttrValue(*dim);
    }
    if (!integral && absl::SimpleAtod(word, &f)) return AttrValue(f);
    if (absl::ascii_isalpha(word[0]))
      return ErrorAt(start, "expected attribute value, got '", word, "'");
    return ErrorAt(start, "bad number '", word, "'");
  }

  // "  # source" up to the end of the line; "" when there is none.
  std::string Comment() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
    if (Peek() != '#') return "";
    ++pos_;
    if (Peek() == ' ') ++pos_;
    size_t end = text_.find('\n', pos_);
    if (end == absl::string_view::npos) end = text_.size();
    absl::string_view source = text_.substr(pos_, end - pos_);
    pos_ = end;
    if (absl::EndsWith(source, "\r")) source.remove_suffix(1);  // CRLF text
    return std::string(source);
  }

  absl::StatusOr<std::string> Name(absl::string_view what) {
    std::string name(Word());
    if (name.empty()) return Expected(what);
    pos_ += name.size();
    return name;
  }

  // The run of name characters at the cursor (not consumed).
  absl::string_view Word() const {
    size_t end = pos_;
    while (end < text_.size() && IsNameChar(text_[end])) ++end;
    return text_.substr(pos_, end - pos_);
  }

  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(text_[pos_])) ++pos_;
  }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    SkipSpace();
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  absl::Status Expect(char c) {
    if (Consume(c)) return absl::OkStatus();
    return Expected(absl::StrCat("'", absl::string_view(&c, 1), "'"));
  }
  absl::Status ExpectWord(absl::string_view word) {
    SkipSpace();
    if (Word() != word) return Expected(absl::StrCat("'", word, "'"));
    pos_ += word.size();
    return absl::OkStatus();
  }

  // "expected <what>, got <the token at the cursor>".
  absl::Status Expected(absl::string_view what) {
    SkipSpace();
    std::string got = "end of input";
    if (pos_ < text_.size()) {
      absl::string_view word = Word();
      got = absl::StrCat("'", word.empty() ? text_.substr(pos_, 1) : word, "'");
    }
    return ErrorAt(pos_, "expected ", what, ", got ", got);
  }

  template <typename... Args>
  absl::Status ErrorAt(size_t pos, const Args&... args) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("line ", line, ", column ", column, ": ", args...));
  }

  absl::string_view text_;
  size_t pos_ = 0;
  bool in_body_ = false;  // parsing a region op's body
  Graph graph_;
  absl::flat_hash_map<std::string, Value*> values_;
};

}  // namespace

absl::StatusOr<Graph> Parse(absl::string_view text) { return Parser(text).Run(); }

}  // namespace tc
