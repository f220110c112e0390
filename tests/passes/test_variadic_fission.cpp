#include "pass_test_util.h"

namespace kiln::passes::testing {

namespace {
void wide(Builder& b) {
  std::vector<ir::Value*> xs, cs;
  for (int i = 0; i < 11; ++i) xs.push_back(b.in("x" + std::to_string(i), {2, 3}));
  for (int i = 0; i < 7; ++i) cs.push_back(b.in("c" + std::to_string(i), {2, static_cast<int64_t>(i + 1)}));
  b.out(b.op("Sum", xs));
  b.out(b.op("Concat", cs, {{"axis", I(-1)}}));
}
int widest(const ir::Graph& g) {
  int w = 0;
  for (const ir::Node* n : g.nodes()) w = std::max(w, n->num_inputs());
  return w;
}
}  // namespace

TEST(VariadicFission, SplitsIntoTrees) {
  auto g = check_rewrite(wide, passes_of(make_variadic_fission(3)));
  EXPECT_LE(widest(*g), 3);
  EXPECT_EQ(count(*g, "Sum"), 6);     // 11 -> 4 partials -> 2 -> 1
  EXPECT_EQ(count(*g, "Concat"), 3);  // 7 -> 2 partials + 1 input -> 1
}

TEST(VariadicFission, MergeFoldsTreesBack) {
  auto g = check_rewrite(wide, passes_of(make_variadic_fission(3)));
  std::vector<std::string> names;
  for (const ir::Value* v : g->outputs()) names.push_back(v->name());
  PassManager pm(PassManager::Options{.verify = true});
  pm.add_stage(passes_of(make_variadic_merge()));
  pm.run(*g);
  restore_output_names(*g, names);
  EXPECT_EQ(count(*g, "Sum"), 1);
  EXPECT_EQ(count(*g, "Concat"), 1);
  EXPECT_EQ(widest(*g), 11);
}

}  // namespace kiln::passes::testing
