// \file The s-expression pattern parser and a backtracking matcher. Matching is written in
// continuation-passing style: each term matches and then calls "the rest of the match", so a
// choice made early (which input order of an Add) is undone when something later fails.
#include "passes/pattern.h"

#include <kiln/error.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>

#include "passes/graph_util.h"

namespace kiln::passes {

using Term = Pattern::Term;

ir::Value* Match::value(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end()) throw Error("pattern has no value named '" + name + "'");
  return it->second;
}
ir::Node* Match::node(const std::string& name) const {
  auto it = nodes.find(name);
  if (it == nodes.end()) throw Error("pattern has no node named '" + name + "'");
  return it->second;
}

namespace {

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  Term parse() {
    Term t = term();
    skip();
    if (i_ != s_.size()) fail("trailing text");
    return t;
  }

 private:
  [[noreturn]] void fail(const std::string& why) {
    throw Error("pattern '" + s_ + "': " + why + " at offset " + std::to_string(i_));
  }
  void skip() { while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_; }
  std::string word() {
    size_t b = i_;
    while (i_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[i_])) && s_[i_] != '(' && s_[i_] != ')' &&
           s_[i_] != ':' && s_[i_] != '?')
      ++i_;
    if (b == i_) fail("expected a name");
    return s_.substr(b, i_ - b);
  }
  Term term() {
    skip();
    if (i_ >= s_.size()) fail("unexpected end");
    Term t;
    char c = s_[i_];
    if (c == '(') {
      ++i_;
      t.kind = Term::Kind::Op;
      t.op = word();
      if (i_ < s_.size() && s_[i_] == ':') {
        ++i_;
        t.name = word();
      }
      for (;;) {
        skip();
        if (i_ >= s_.size()) fail("missing ')'");
        if (s_[i_] == ')') { ++i_; break; }
        t.args.push_back(term());
        if (i_ < s_.size() && s_[i_] == '?') {
          ++i_;
          t.args.back().optional = true;
        } else if (t.args.size() > 1 && t.args[t.args.size() - 2].optional) {
          fail("only trailing operands may be optional");
        }
      }
    } else if (c == '$' || c == '#') {
      ++i_;
      t.kind = c == '$' ? Term::Kind::Any : Term::Kind::Const;
      t.name = word();
    } else if (c == '_') {
      ++i_;
      t.kind = Term::Kind::Wildcard;
    } else {
      std::string w = word();
      char* end = nullptr;
      t.kind = Term::Kind::Literal;
      t.literal = std::strtod(w.c_str(), &end);
      if (!end || *end) fail("bad literal '" + w + "'");
    }
    return t;
  }
  const std::string& s_;
  size_t i_ = 0;
};

struct State {
  std::map<std::string, ir::Value*> values;
  std::map<std::string, ir::Node*> nodes;
  std::vector<ir::Node*> matched;
};
using Cont = std::function<bool(State&)>;

bool bind(State& s, const std::string& name, ir::Value* v) {
  auto [it, fresh] = s.values.emplace(name, v);
  return fresh || it->second == v;
}

bool match_term(const Term& t, ir::Value* v, State s, const Cont& k);

bool match_args(const Term& t, ir::Node* n, const std::vector<int>& order, size_t i, State s, const Cont& k) {
  if (i == t.args.size()) return k(s);
  if (t.args[i].optional && (order[i] >= n->num_inputs() || !n->input(order[i])))
    return match_args(t, n, order, i + 1, std::move(s), k);
  return match_term(t.args[i], n->input(order[i]), std::move(s),
               [&](State& s2) { return match_args(t, n, order, i + 1, s2, k); });
}

bool match_term(const Term& t, ir::Value* v, State s, const Cont& k) {
  if (!v) return false;
  switch (t.kind) {
    case Term::Kind::Wildcard: return k(s);
    case Term::Kind::Any: return bind(s, t.name, v) && k(s);
    case Term::Kind::Const: return v->is_constant() && bind(s, t.name, v) && k(s);
    case Term::Kind::Literal: {
      auto c = uniform_const(v);
      return c && std::abs(*c - t.literal) <= 1e-4 * std::max(1.0, std::abs(t.literal)) && k(s);
    }
    case Term::Kind::Op: break;
  }
  ir::Node* n = v->producer();
  if (!n || n->op_type() != t.op || !n->domain().empty() || v->producer_output() != 0) return false;
  const auto required = std::count_if(t.args.begin(), t.args.end(), [](const Term& a) { return !a.optional; });
  if (n->num_inputs() < required || n->num_inputs() > static_cast<int>(t.args.size())) return false;
  if (!t.name.empty()) {
    if (!bind(s, t.name, v)) return false;
    s.nodes[t.name] = n;
  }
  if (std::find(s.matched.begin(), s.matched.end(), n) == s.matched.end()) s.matched.push_back(n);
  std::vector<int> order(t.args.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  if (match_args(t, n, order, 0, s, k)) return true;
  if ((t.op == "Add" || t.op == "Mul") && order.size() == 2) {
    std::swap(order[0], order[1]);
    return match_args(t, n, order, 0, std::move(s), k);
  }
  return false;
}

}  // namespace

Pattern::Pattern(const std::string& text) : root_(Parser(text).parse()) {
  if (root_.kind != Term::Kind::Op) throw Error("pattern '" + text + "': the root must be an op");
}

std::optional<Match> Pattern::match(const ir::Graph& g, ir::Node* root) const {
  if (!root || root->num_outputs() < 1 || !root->output(0)) return std::nullopt;
  std::optional<Match> result;
  State start;
  match_term(root_, root->output(0), start, [&](State& s) {
    for (ir::Node* n : s.matched) {
      if (n == root) continue;
      for (const ir::Value* o : n->outputs()) {
        if (!o) continue;
        if (is_graph_output(g, o)) return false;
        for (const ir::Use& u : o->uses())
          if (std::find(s.matched.begin(), s.matched.end(), u.node) == s.matched.end()) return false;
      }
    }
    result = Match{root, s.values, s.nodes, s.matched};
    return true;
  });
  return result;
}

}  // namespace kiln::passes
