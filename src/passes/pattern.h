// Graph patterns written as s-expressions, so rewrites are data (a table of pattern strings)
// instead of one hand-written matcher each:
//
//   "(Mul $x (Sigmoid $x))"                      x * sigmoid(x)
//   "(Add (Mul (Div (Sub:d $x (ReduceMean $x)) ...) #gamma) #beta)"
//
//   (Op a b ...)    a node of op Op (domain ai.onnx) with exactly these inputs; Add and Mul
//                   also match with their two inputs swapped
//   (Op:name ...)   the same, binding the node and its output to `name`
//   $name           any value; a name seen again must be the same value
//   #name           a constant value
//   2.0             a constant whose elements all equal this number
//   _               anything
//   term?           (an operand) an optional trailing input: the node may lack it, so
//                   "(ReduceMean $x #axes?)" matches axes as an attribute or as an input
//
// A match also requires that every matched node except the root is read only by other
// matched nodes, so replacing the root's output makes them all dead.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

struct Match {
  ir::Node* root = nullptr;
  std::map<std::string, ir::Value*> values;
  std::map<std::string, ir::Node*> nodes;
  std::vector<ir::Node*> matched;
  ir::Value* value(const std::string& name) const;  // throws if the pattern has no such name
  ir::Node* node(const std::string& name) const;
};

class Pattern {
 public:
  // Throws kiln::Error on a malformed pattern (a bug in the table, found by the tests).
  explicit Pattern(const std::string& text);
  const std::string& root_op() const { return root_.op; }
  std::optional<Match> match(const ir::Graph& g, ir::Node* root) const;

  struct Term {
    enum class Kind { Op, Any, Const, Literal, Wildcard } kind = Kind::Any;
    std::string op, name;
    double literal = 0;
    bool optional = false;  // an operand that may be absent (only trailing ones)
    std::vector<Term> args;
  };

 private:
  Term root_;
};

}  // namespace kiln::passes
