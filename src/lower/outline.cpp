#include "lower/outline.h"

#include <memory>
#include <unordered_map>

#include "ir/graph_util.h"

namespace kiln::lower {

ir::Node* outline(ir::Graph& g, const std::vector<ir::Node*>& nodes, const std::vector<ir::Value*>& results,
                  const std::string& op, const std::string& name) {
  auto body = std::make_shared<ir::Graph>();
  body->name = name;
  body->parent = &g;
  body->opsets = g.opsets;
  std::unordered_map<const ir::Value*, ir::Value*> map;
  std::vector<ir::Value*> ext_in;
  for (ir::Node* n : nodes) {
    std::vector<ir::Value*> ins;
    for (ir::Value* v : n->inputs()) {
      if (!v) {
        ins.push_back(nullptr);
        continue;
      }
      if (!map.count(v)) {
        if (v->is_constant()) {
          map[v] = body->add_constant(body->unique_name(v->name()), v->constant());
        } else {
          map[v] = body->add_input(body->unique_name(v->name()), v->type);
          ext_in.push_back(v);
        }
      }
      ins.push_back(map[v]);
    }
    std::vector<ir::Value*> outs;
    for (ir::Value* v : n->outputs()) {
      if (v) map[v] = body->add_value(v->name(), v->type);
      outs.push_back(v ? map[v] : nullptr);
    }
    body->add_node(n->op_type(), ins, outs, n->attrs, n->name(), n->domain());
  }
  std::vector<ir::Value*> new_results;
  for (ir::Value* r : results) {
    body->add_output(map.at(r));
    new_results.push_back(ir::add_value_like(g, r, r->name()));
  }
  ir::use_kiln_domain(g);
  ir::Node* fused = g.add_node(op, ext_in, new_results, {{"body", ir::Attribute::of_graph(body)}},
                               g.unique_name(name), "kiln");
  for (size_t i = 0; i < results.size(); ++i) g.replace_all_uses(results[i], new_results[i]);
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) g.remove_node(*it);
  return fused;
}

}  // namespace kiln::lower
