// The bad-model corpus: each case builds a broken model with the onnx protobuf API, runs the kiln
// binary on it and expects exit code 2 with one message naming the node (or field) and the reason.
// A crash, a hang, a success or a vague message is a bug in kiln, not in the case.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "cli_util.h"
#include "frontend/onnx/tensor_proto.h"

namespace kiln::testing {

namespace fs = std::filesystem;

namespace {

using onnx::TensorProto;

struct Case {
  onnx::ModelProto m;
  onnx::GraphProto* g;
  fs::path dir;

  explicit Case(const std::string& name, int opset = 13) : dir(temp_dir("bad_" + name)) {
    m.set_ir_version(8);
    auto* os = m.add_opset_import();
    os->set_domain("");
    os->set_version(opset);
    g = m.mutable_graph();
    g->set_name(name);
  }

  // dims: >= 0 fixed, -1 symbolic ("N").
  static void set_type(onnx::ValueInfoProto* vi, const std::string& name, int elem, const std::vector<int64_t>* dims) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    if (!dims) return;
    auto* shape = tt->mutable_shape();
    for (int64_t d : *dims) {
      if (d == -1) shape->add_dim()->set_dim_param("N");
      else shape->add_dim()->set_dim_value(d);
    }
  }
  void input(const std::string& name, const std::vector<int64_t>& dims, int elem = TensorProto::FLOAT) {
    set_type(g->add_input(), name, elem, &dims);
  }
  void output(const std::string& name, int elem = TensorProto::FLOAT) { set_type(g->add_output(), name, elem, nullptr); }

  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs, const std::string& name = "") {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? "bad_" + op : name);
    for (const auto& s : ins) n->add_input(s);
    for (const auto& s : outs) n->add_output(s);
    return n;
  }

  TensorProto* init(const std::string& name, int elem, const std::vector<int64_t>& dims) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(elem);
    for (int64_t d : dims) t->add_dims(d);
    return t;
  }
  void init_i64(const std::string& name, const std::vector<int64_t>& vals, std::vector<int64_t> dims = {-2}) {
    if (dims.size() == 1 && dims[0] == -2) dims = {static_cast<int64_t>(vals.size())};
    auto* t = init(name, TensorProto::INT64, dims);
    for (int64_t v : vals) t->add_int64_data(v);
  }
  void init_f(const std::string& name, const std::vector<int64_t>& dims, float value = 0.5f) {
    auto* t = init(name, TensorProto::FLOAT, dims);
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    for (int64_t i = 0; i < n; ++i) t->add_float_data(value);
  }

  fs::path save() {
    fs::path p = dir / "model.onnx";
    save_model(m, p);
    return p;
  }
  CliResult run(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"run", save().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_kiln(args);
  }
};

onnx::AttributeProto* attr(onnx::NodeProto* n, const std::string& name, onnx::AttributeProto::AttributeType type) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}
void attr_i(onnx::NodeProto* n, const std::string& name, int64_t v) { attr(n, name, onnx::AttributeProto::INT)->set_i(v); }
void attr_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = attr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}

void expect_error(const CliResult& r, const std::string& fragment) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("kiln: error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(fragment), std::string::npos) << "expected '" << fragment << "' in: " << r.output;
}

// A small valid model (Relu of x plus a float initializer) for the byte-level cases.
onnx::ModelProto valid_model() {
  Case c("valid");
  c.input("x", {2, 3});
  c.init_f("b", {2, 3});
  c.node("Add", {"x", "b"}, {"s"});
  c.node("Relu", {"s"}, {"y"});
  c.output("y");
  return c.m;
}

}  // namespace

// ---- file-level damage ----

TEST(BadModel, TruncatedGeneratedModel) {
  fs::path d = temp_dir("bad_truncated");
  std::string full = valid_model().SerializeAsString();
  ASSERT_GT(full.size(), 60u);
  for (size_t cut : {size_t{1}, size_t{5}, full.size() / 4, full.size() / 2, full.size() - 20, full.size() - 1}) {
    write_bytes(d / "model.onnx", full.substr(0, cut));
    auto r = run_kiln({"run", (d / "model.onnx").string()});
    EXPECT_EQ(r.exit_code, 2) << "cut at " << cut << ": " << r.output;
    EXPECT_NE(r.output.find("kiln: error:"), std::string::npos) << "cut at " << cut << ": " << r.output;
  }
}

TEST(BadModel, WrongMagicZip) {
  fs::path d = temp_dir("bad_zip");
  static const char zip[] = "PK\x03\x04\x14\x00\x00\x00\x08\x00garbage-zip-payload";
  write_bytes(d / "model.onnx", std::string(zip, sizeof zip - 1));  // embedded NULs: not strlen
  expect_error(run_kiln({"run", (d / "model.onnx").string()}), "not a valid ONNX model");
}

TEST(BadModel, TensorProtoSavedAsModel) {
  fs::path d = temp_dir("bad_tensor_as_model");
  TensorProto t;
  t.set_name("weights");
  t.set_data_type(TensorProto::FLOAT);
  t.add_dims(2);
  t.add_dims(3);
  for (int i = 0; i < 6; ++i) t.add_float_data(1.0f);
  write_bytes(d / "model.onnx", t.SerializeAsString());
  expect_error(run_kiln({"run", (d / "model.onnx").string()}), "not a valid ONNX model");
}

TEST(BadModel, NoGraph) {
  fs::path d = temp_dir("bad_no_graph");
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  save_model(m, d / "model.onnx");
  expect_error(run_kiln({"run", (d / "model.onnx").string()}), "it has no graph");
}

TEST(BadModel, NoOutputs) {
  Case c("no_outputs");
  c.input("x", {2, 3});
  c.node("Relu", {"x"}, {"y"});
  expect_error(c.run(), "the graph has no outputs");
}

// ---- graph structure ----

TEST(BadModel, OutputNobodyProduces) {
  Case c("output_dangling");
  c.input("x", {2, 3});
  c.node("Relu", {"x"}, {"y"});
  c.output("z");
  expect_error(c.run(), "graph output 'z' is not produced by any node");
}

TEST(BadModel, SelfLoop) {
  Case c("self_loop");
  c.input("x", {2, 3});
  c.node("Add", {"x", "y"}, {"y"}, "selfish");
  c.output("y");
  expect_error(c.run(), "node 'selfish' (Add): graph has a cycle through this node");
}

TEST(BadModel, TwoNodesSameOutput) {
  Case c("dup_output");
  c.input("x", {2, 3});
  c.node("Relu", {"x"}, {"y"}, "first");
  c.node("Sigmoid", {"x"}, {"y"}, "second");
  c.output("y");
  expect_error(c.run(), "node 'second' (Sigmoid): output 'y' is already produced elsewhere");
}

TEST(BadModel, InitializerAndNodeOutputSameName) {
  Case c("dup_init_output");
  c.input("x", {2, 3});
  c.init_f("w", {2, 3});
  c.node("Relu", {"x"}, {"w"}, "clobber");
  c.node("Add", {"x", "w"}, {"y"});
  c.output("y");
  expect_error(c.run(), "node 'clobber' (Relu): output 'w' is already produced elsewhere");
}

TEST(BadModel, DuplicateInitializer) {
  Case c("dup_init");
  c.input("x", {2, 3});
  c.init_f("w", {2, 3});
  c.init_f("w", {2, 3});
  c.node("Add", {"x", "w"}, {"y"});
  c.output("y");
  expect_error(c.run(), "initializer 'w': duplicate name");
}

TEST(BadModel, DuplicateGraphInput) {
  Case c("dup_input");
  c.input("x", {2, 3});
  c.input("x", {2, 3});
  c.node("Relu", {"x"}, {"y"});
  c.output("y");
  expect_error(c.run(), "graph input 'x': duplicate name");
}

TEST(BadModel, EmptyOpType) {
  Case c("empty_op");
  c.input("x", {2, 3});
  c.node("", {"x"}, {"y"}, "nameless_op");
  c.output("y");
  expect_error(c.run(), "node 'nameless_op' (): node has no op type");
}

TEST(BadModel, TooManyInputs) {
  Case c("too_many_inputs");
  c.input("x", {2, 3});
  c.node("Relu", {"x", "x", "x"}, {"y"}, "greedy");
  c.output("y");
  expect_error(c.run(), "node 'greedy' (Relu): has 3 inputs, op takes 1..1");
}

TEST(BadModel, UnknownDomain) {
  Case c("unknown_domain");
  c.input("x", {2, 3});
  auto* n = c.node("Relu", {"x"}, {"y"}, "foreign");
  n->set_domain("com.example.nowhere");
  c.output("y");
  expect_error(c.run(), "node 'foreign' (Relu): unsupported op 'Relu' in domain 'com.example.nowhere'");
}

TEST(BadModel, UnsupportedOpset) {
  Case c("opset99", 99);
  c.input("x", {2, 3});
  c.node("Relu", {"x"}, {"y"});
  c.output("y");
  expect_error(c.run(), "model uses opset 99 of ai.onnx");
}

// ---- initializers and tensor data ----

TEST(BadModel, RawDataSizeDisagreesWithDims) {
  Case c("raw_size");
  c.input("x", {2, 3});
  c.init("w", TensorProto::FLOAT, {2, 3})->set_raw_data(std::string(20, '\0'));
  c.node("Add", {"x", "w"}, {"y"});
  c.output("y");
  expect_error(c.run(), "initializer 'w': raw data has 20 bytes but");
}

TEST(BadModel, TypedDataCountDisagreesWithDims) {
  Case c("typed_count");
  c.input("x", {2, 3});
  auto* t = c.init("w", TensorProto::FLOAT, {2, 3});
  for (int i = 0; i < 5; ++i) t->add_float_data(1.0f);
  c.node("Add", {"x", "w"}, {"y"});
  c.output("y");
  expect_error(c.run(), "initializer 'w': data has 5 elements but its dims say 6");
}

TEST(BadModel, Int64DataCountDisagreesWithDims) {
  Case c("int64_count");
  c.input("x", {2, 3});
  c.init_i64("shape", {3, 2, 1}, {2});
  c.node("Reshape", {"x", "shape"}, {"y"});
  c.output("y");
  expect_error(c.run(), "initializer 'shape': data has 3 elements but its dims say 2");
}

TEST(BadModel, NegativeDimInInitializer) {
  Case c("neg_init_dim");
  c.input("x", {2, 3});
  c.init("w", TensorProto::FLOAT, {2, -3});
  c.node("Add", {"x", "w"}, {"y"});
  c.output("y");
  expect_error(c.run(), "initializer 'w': negative dimension -3");
}

TEST(BadModel, NegativeDimInGraphInput) {
  Case c("neg_input_dim");
  c.input("x", {2, -5});
  c.node("Relu", {"x"}, {"y"});
  c.output("y");
  expect_error(c.run(), "graph input 'x': negative dimension -5");
}

TEST(BadModel, DimsProductOverflowsInt64) {
  Case c("overflow_dims");
  c.input("x", {2, 3});
  c.init("w", TensorProto::FLOAT, {int64_t{1} << 32, int64_t{1} << 32, 16});
  c.node("Add", {"x", "w"}, {"y"});
  c.output("y");
  expect_error(c.run(), "initializer 'w': tensor shape overflows int64");
}

TEST(BadModel, HugeInitializerRefusedByAllocationLimit) {
  Case c("huge_init");
  c.input("x", {2, 3});
  c.init("w", TensorProto::FLOAT, {1000000, 1000000});
  c.node("Add", {"x", "w"}, {"y"});
  c.output("y");
  expect_error(c.run(), "initializer 'w': tensor float[1000000,1000000] needs 4000000000000 bytes, more than the memory cap of ");
}

TEST(BadModel, ConstantOfShapeHugeRefusedByAllocationLimit) {
  Case c("huge_constant_of_shape");
  c.input("x", {2, 3});
  c.init_i64("shape", {1000000000000});
  c.node("ConstantOfShape", {"shape"}, {"big"}, "giant");
  c.node("Add", {"x", "big"}, {"y"});
  c.output("y");
  expect_error(c.run(), "node 'giant' (ConstantOfShape): output 0: tensor float[1000000000000] needs 4000000000000 bytes, more than the memory cap of ");
}

TEST(BadModel, InitializerWithoutDataType) {
  Case c("no_dtype");
  c.input("x", {2, 3});
  c.init("w", TensorProto::UNDEFINED, {2, 3});
  c.node("Add", {"x", "w"}, {"y"});
  c.output("y");
  expect_error(c.run(), "initializer 'w': tensor has no data type");
}

TEST(BadModel, StringTensorWrongCount) {
  Case c("string_count");
  c.input("x", {3}, TensorProto::STRING);
  auto* t = c.init("s", TensorProto::STRING, {3});
  t->add_string_data("a");
  t->add_string_data("b");
  c.node("Concat", {"x", "s"}, {"y"});
  c.output("y", TensorProto::STRING);
  expect_error(c.run(), "initializer 's': data has 2 elements but its dims say 3");
}

// ---- external data ----

namespace {
void add_external(Case& c, const std::string& location) {
  c.input("x", {2, 3});
  auto* t = c.init("w", TensorProto::FLOAT, {2, 3});
  t->set_data_location(TensorProto::EXTERNAL);
  auto* kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  c.node("Add", {"x", "w"}, {"y"});
  c.output("y");
}
}  // namespace

TEST(BadModel, ExternalDataParentTraversal) {
  Case c("ext_dotdot");
  add_external(c, "../../etc/passwd");
  expect_error(c.run(), "initializer 'w': external data location '../../etc/passwd' points outside the model folder");
}

TEST(BadModel, ExternalDataAbsolutePath) {
  Case c("ext_abs");
  add_external(c, "/etc/passwd");
  expect_error(c.run(), "initializer 'w': external data location '/etc/passwd' must be a relative path");
}

TEST(BadModel, ExternalDataSymlinkOutside) {
  Case c("ext_symlink");
  fs::create_symlink("/etc/passwd", c.dir / "weights.bin");
  add_external(c, "weights.bin");
  expect_error(c.run(), "initializer 'w': external data location 'weights.bin' points outside the model folder");
}

TEST(BadModel, ExternalDataRangePastEnd) {
  Case c("ext_range");
  write_bytes(c.dir / "weights.bin", std::string(8, '\0'));
  add_external(c, "weights.bin");
  expect_error(c.run(), "initializer 'w': external data range [0, +24) lies outside 'weights.bin' (8 bytes)");
}

TEST(BadModel, ExternalDataMissingFile) {
  Case c("ext_missing");
  add_external(c, "nothere.bin");
  expect_error(c.run(), "initializer 'w': cannot open external data file 'nothere.bin'");
}

// ---- attributes ----

TEST(BadModel, GatherAxisAsString) {
  Case c("gather_axis_string");
  c.input("x", {2, 3});
  c.init_i64("idx", {0, 1});
  auto* n = c.node("Gather", {"x", "idx"}, {"y"}, "g");
  attr(n, "axis", onnx::AttributeProto::STRING)->set_s("one");
  c.output("y");
  expect_error(c.run(), "node 'g' (Gather): attribute 'axis' is string, expected int");
}

TEST(BadModel, CastWithoutTo) {
  Case c("cast_no_to");
  c.input("x", {2, 3});
  c.node("Cast", {"x"}, {"y"}, "caster");
  c.output("y");
  expect_error(c.run(), "node 'caster' (Cast): missing required attribute 'to'");
}

TEST(BadModel, CastToInvalidType) {
  Case c("cast_bad_to");
  c.input("x", {2, 3});
  attr_i(c.node("Cast", {"x"}, {"y"}, "caster"), "to", 12345);
  c.output("y");
  expect_error(c.run(), "node 'caster' (Cast): 'to' = 12345 is not a tensor element type");
}

TEST(BadModel, ConvKernelShapeWrongLength) {
  Case c("conv_kernel_len");
  c.input("x", {1, 1, 5, 5});
  c.init_f("w", {1, 1, 3, 3});
  attr_ints(c.node("Conv", {"x", "w"}, {"y"}, "conv"), "kernel_shape", {3, 3, 3});
  c.output("y");
  expect_error(c.run(), "node 'conv' (Conv): kernel_shape [3,3,3] must have one entry per spatial axis (2)");
}

TEST(BadModel, TransposePermWrongLength) {
  Case c("perm_len");
  c.input("x", {2, 3});
  attr_ints(c.node("Transpose", {"x"}, {"y"}, "tr"), "perm", {0, 1, 2});
  c.output("y");
  expect_error(c.run(), "node 'tr' (Transpose): perm has 3 entries for rank 2");
}

TEST(BadModel, AttributeWithoutTypeOrValue) {
  Case c("attr_empty");
  c.input("x", {2, 3});
  auto* n = c.node("Softmax", {"x"}, {"y"}, "sm");
  n->add_attribute()->set_name("axis");
  c.output("y");
  expect_error(c.run(), "node 'sm' (Softmax): attribute 'axis': has no type and no value");
}

// ---- control flow ----

namespace {
onnx::GraphProto branch(const std::string& name, int n_outputs) {
  onnx::GraphProto b;
  b.set_name(name);
  for (int i = 0; i < n_outputs; ++i) {
    std::string o = name + "_out" + std::to_string(i);
    auto* n = b.add_node();
    n->set_op_type("Relu");
    n->set_name(name + "_relu" + std::to_string(i));
    n->add_input("x");
    n->add_output(o);
    Case::set_type(b.add_output(), o, TensorProto::FLOAT, nullptr);
  }
  return b;
}
}  // namespace

TEST(BadModel, IfBranchesOutputCountsDiffer) {
  Case c("if_counts");
  c.input("x", {2, 3});
  c.input("cond", {}, TensorProto::BOOL);
  auto* n = c.node("If", {"cond"}, {"y"}, "branchy");
  *attr(n, "then_branch", onnx::AttributeProto::GRAPH)->mutable_g() = branch("then", 1);
  *attr(n, "else_branch", onnx::AttributeProto::GRAPH)->mutable_g() = branch("else", 2);
  c.output("y");
  expect_error(c.run(), "node 'branchy' (If): branch 'else' gives 2 outputs, node has 1");
}

TEST(BadModel, IfWithoutElseBranch) {
  Case c("if_no_else");
  c.input("x", {2, 3});
  c.input("cond", {}, TensorProto::BOOL);
  auto* n = c.node("If", {"cond"}, {"y"}, "branchy");
  *attr(n, "then_branch", onnx::AttributeProto::GRAPH)->mutable_g() = branch("then", 1);
  c.output("y");
  expect_error(c.run(), "node 'branchy' (If): missing graph attribute 'else_branch'");
}

TEST(BadModel, LoopWithoutBody) {
  Case c("loop_no_body");
  c.input("x", {2, 3});
  c.init_i64("M", {3}, {});
  c.node("Loop", {"M", "", "x"}, {"y"}, "looper");
  c.output("y");
  expect_error(c.run(), "node 'looper' (Loop): missing graph attribute 'body'");
}

TEST(BadModel, SubgraphReadsUnknownValue) {
  Case c("branch_dangling");
  c.input("x", {2, 3});
  c.input("cond", {}, TensorProto::BOOL);
  auto* n = c.node("If", {"cond"}, {"y"}, "branchy");
  onnx::GraphProto then_b = branch("then", 1);
  then_b.mutable_node(0)->set_input(0, "phantom");
  *attr(n, "then_branch", onnx::AttributeProto::GRAPH)->mutable_g() = then_b;
  *attr(n, "else_branch", onnx::AttributeProto::GRAPH)->mutable_g() = branch("else", 1);
  c.output("y");
  expect_error(c.run(), "node 'then_relu0' (Relu): input 'phantom' is not produced by any node");
}

TEST(BadModel, SubgraphsNestedTooDeep) {
  Case c("deep_nesting");
  c.input("x", {2, 3});
  c.input("cond", {}, TensorProto::BOOL);
  onnx::GraphProto inner = branch("leaf", 1);
  for (int level = 0; level < 20; ++level) {
    onnx::GraphProto outer;
    outer.set_name("level" + std::to_string(level));
    auto* n = outer.add_node();
    n->set_op_type("If");
    n->set_name("if" + std::to_string(level));
    n->add_input("cond");
    n->add_output("o" + std::to_string(level));
    // Only one branch nests further, so the file stays linear in the depth.
    *attr(n, "then_branch", onnx::AttributeProto::GRAPH)->mutable_g() = inner;
    *attr(n, "else_branch", onnx::AttributeProto::GRAPH)->mutable_g() = branch("leaf", 1);
    Case::set_type(outer.add_output(), "o" + std::to_string(level), TensorProto::FLOAT, nullptr);
    inner = outer;
  }
  auto* n = c.node("If", {"cond"}, {"y"}, "top");
  *attr(n, "then_branch", onnx::AttributeProto::GRAPH)->mutable_g() = inner;
  *attr(n, "else_branch", onnx::AttributeProto::GRAPH)->mutable_g() = branch("leaf", 1);
  c.output("y");
  expect_error(c.run(), "subgraphs nested deeper than 16");
}

// ---- shapes: compile time and run time ----

TEST(BadModel, ReshapeImpossibleAtCompileTime) {
  Case c("reshape_compile");
  c.input("x", {2, 3});
  c.init_i64("shape", {4, 2});
  c.node("Reshape", {"x", "shape"}, {"y"}, "reshaper");
  c.output("y");
  expect_error(c.run(), "node 'reshaper' (Reshape): cannot reshape 6 elements into 8");
}

TEST(BadModel, ReshapeImpossibleAtRunTime) {
  Case c("reshape_runtime");
  c.input("x", {-1, 3});
  c.init_i64("shape", {4});
  c.node("Reshape", {"x", "shape"}, {"y"}, "reshaper");
  c.output("y");
  expect_error(c.run({"--dim", "N=2"}), "node 'reshaper' (Reshape): cannot reshape 6 elements into 4");
}

TEST(BadModel, GatherIndexOutOfRange) {
  Case c("gather_oob");
  c.input("x", {-1, 3});
  c.init_i64("idx", {0, 7});
  c.node("Gather", {"x", "idx"}, {"y"}, "gatherer");
  c.output("y");
  expect_error(c.run({"--dim", "N=2"}), "node 'gatherer' (Gather): index 7 is out of range for an axis of extent 2");
}

TEST(BadModel, ConvKernelLargerThanInput) {
  Case c("conv_big_kernel");
  c.input("x", {1, 1, 3, 3});
  c.init_f("w", {1, 1, 5, 5});
  c.node("Conv", {"x", "w"}, {"y"}, "conv");
  c.output("y");
  expect_error(c.run(), "node 'conv' (Conv): kernel extent 5 (kernel 5, dilation 1) exceeds the padded input extent 3 along spatial axis 0");
}

TEST(BadModel, ConvKernelLargerThanInputAtRunTime) {
  Case c("conv_big_kernel_rt");
  c.input("x", {1, 1, -1, 5});
  c.init_f("w", {1, 1, 5, 5});
  c.node("Conv", {"x", "w"}, {"y"}, "conv");
  c.output("y");
  expect_error(c.run({"--dim", "N=2"}), "node 'conv' (Conv): kernel extent 5 (kernel 5, dilation 1) exceeds the padded input extent 2 along spatial axis 0");
}

TEST(BadModel, ConcatMismatchedRanks) {
  Case c("concat_ranks");
  c.input("x", {2, 3});
  c.init_f("w", {2, 3, 1});
  attr_i(c.node("Concat", {"x", "w"}, {"y"}, "cat"), "axis", 0);
  c.output("y");
  expect_error(c.run(), "node 'cat' (Concat): inputs have different ranks");
}

TEST(BadModel, MatMulMismatchedInnerDims) {
  Case c("matmul_inner");
  c.input("x", {2, 3});
  c.init_f("w", {4, 5});
  c.node("MatMul", {"x", "w"}, {"y"}, "mm");
  c.output("y");
  expect_error(c.run(), "node 'mm' (MatMul): inner dimensions do not match: A float[2,3], B float[4,5]");
}

TEST(BadModel, MatMulMismatchedInnerDimsAtRunTime) {
  Case c("matmul_inner_rt");
  c.input("x", {2, -1});
  c.init_f("w", {4, 5});
  c.node("MatMul", {"x", "w"}, {"y"}, "mm");
  c.output("y");
  expect_error(c.run({"--dim", "N=3"}), "node 'mm' (MatMul): inner dimensions do not match: A float[2,3], B float[4,5]");
}

TEST(BadModel, AddIncompatibleBroadcast) {
  Case c("add_broadcast");
  c.input("x", {2, 3});
  c.init_f("w", {4});
  c.node("Add", {"x", "w"}, {"y"}, "adder");
  c.output("y");
  expect_error(c.run(), "node 'adder' (Add): shapes cannot be broadcast (dimension 4 vs 3)");
}

TEST(BadModel, SplitSizesDoNotSum) {
  Case c("split_sum");
  c.input("x", {6, 2});
  c.init_i64("split", {2, 2});
  c.node("Split", {"x", "split"}, {"y", "z"}, "splitter");
  c.output("y");
  c.output("z");
  expect_error(c.run(), "node 'splitter' (Split): split sizes add up to 4, axis extent is 6");
}

// ---- more attribute and input values that kernels divide by, index with or size with ----

namespace {
onnx::NodeProto* one_op(Case& c, const std::string& op, const std::vector<int64_t>& dims,
                        const std::vector<std::string>& extra_inputs = {}, int elem = TensorProto::FLOAT) {
  c.input("x", dims, elem);
  std::vector<std::string> ins{"x"};
  ins.insert(ins.end(), extra_inputs.begin(), extra_inputs.end());
  auto* n = c.node(op, ins, {"y"}, "probe");
  c.output("y", elem);
  return n;
}
}  // namespace

TEST(BadModel, IrVersionZero) {
  Case c("ir0");
  c.m.set_ir_version(0);
  one_op(c, "Relu", {2, 3});
  expect_error(c.run(), "not a valid ONNX model: ir_version 0 is not supported");
}

TEST(BadModel, ReshapeTwoInferredDims) {
  Case c("reshape_two_minus1");
  c.init_i64("shape", {-1, -1});
  one_op(c, "Reshape", {2, 3}, {"shape"});
  expect_error(c.run(), "node 'probe' (Reshape): shape has more than one -1");
}

TEST(BadModel, SqueezeAxisOutOfRange) {
  Case c("squeeze_axis");
  c.init_i64("axes", {5});
  one_op(c, "Squeeze", {2, 1}, {"axes"});
  expect_error(c.run(), "node 'probe' (Squeeze): axis 5 is out of range for rank 2");
}

TEST(BadModel, SliceStepZero) {
  Case c("slice_step0");
  c.init_i64("starts", {0});
  c.init_i64("ends", {2});
  c.init_i64("axes", {0});
  c.init_i64("steps", {0});
  one_op(c, "Slice", {4, 3}, {"starts", "ends", "axes", "steps"});
  expect_error(c.run(), "node 'probe' (Slice): slice step cannot be 0");
}

TEST(BadModel, ExpandIncompatibleAtRunTime) {
  Case c("expand_rt");
  c.init_i64("shape", {4, 3});
  one_op(c, "Expand", {-1, 3}, {"shape"});
  expect_error(c.run({"--dim", "N=2"}), "node 'probe' (Expand): shapes cannot be broadcast (dimension 4 vs 2)");
}

TEST(BadModel, TileNegativeRepeats) {
  Case c("tile_neg");
  c.init_i64("reps", {2, -1});
  one_op(c, "Tile", {2, 3}, {"reps"});
  expect_error(c.run(), "node 'probe' (Tile): negative repeat");
}

TEST(BadModel, TileHugeRepeats) {
  Case c("tile_huge");
  c.init_i64("reps", {1000000, 1000000});
  one_op(c, "Tile", {2, 3}, {"reps"});
  expect_error(c.run(), "node 'probe' (Tile): output 'y': float[2000000,3000000] needs 24000000000000 bytes, more than the memory cap of ");
}

TEST(BadModel, ExpandHuge) {
  Case c("expand_huge");
  c.init_i64("shape", {1000000, 1000000, 3});
  one_op(c, "Expand", {2, 3}, {"shape"});
  expect_error(c.run(), "node 'probe' (Expand): shapes cannot be broadcast (dimension 1000000 vs 2)");
}

TEST(BadModel, TopKLargerThanAxis) {
  Case c("topk_k");
  c.init_i64("k", {9});
  c.input("x", {2, 3});
  c.node("TopK", {"x", "k"}, {"y", "i"}, "probe");
  c.output("y");
  c.output("i", TensorProto::INT64);
  expect_error(c.run(), "node 'probe' (TopK): K 9 exceeds the axis extent 3");
}

TEST(BadModel, RangeDeltaZero) {
  Case c("range_delta0");
  c.input("x", {}, TensorProto::INT64);
  c.init_i64("limit", {10}, {});
  c.init_i64("delta", {0}, {});
  c.node("Range", {"x", "limit", "delta"}, {"y"}, "probe");
  c.output("y", TensorProto::INT64);
  expect_error(c.run(), "node 'probe' (Range): delta cannot be 0");
}

TEST(BadModel, RangeHuge) {
  Case c("range_huge");
  c.input("x", {}, TensorProto::INT64);
  c.init_i64("limit", {int64_t{1} << 50}, {});
  c.init_i64("delta", {1}, {});
  c.node("Range", {"x", "limit", "delta"}, {"y"}, "probe");
  c.output("y", TensorProto::INT64);
  expect_error(c.run(), "node 'probe' (Range): output 0: tensor int64[1125899906842579] needs 9007199254740632 bytes, more than the memory cap of ");
}

TEST(BadModel, IntegerDivisionByZero) {
  Case c("div0");
  c.init("zero", TensorProto::INT32, {1})->add_int32_data(0);
  one_op(c, "Div", {2, 3}, {"zero"}, TensorProto::INT32);
  expect_error(c.run(), "node 'probe' (Div): integer division by zero");
}

TEST(BadModel, IntegerModByZero) {
  Case c("mod0");
  c.init("zero", TensorProto::INT32, {1})->add_int32_data(0);
  one_op(c, "Mod", {2, 3}, {"zero"}, TensorProto::INT32);
  expect_error(c.run(), "node 'probe' (Mod): integer modulo by zero");
}

TEST(BadModel, DepthToSpaceBlocksizeZero) {
  Case c("d2s0");
  attr_i(one_op(c, "DepthToSpace", {1, 4, 2, 2}), "blocksize", 0);
  expect_error(c.run(), "node 'probe' (DepthToSpace): blocksize must be positive");
}

TEST(BadModel, SpaceToDepthBlocksizeZero) {
  Case c("s2d0");
  attr_i(one_op(c, "SpaceToDepth", {1, 4, 2, 2}), "blocksize", 0);
  expect_error(c.run(), "node 'probe' (SpaceToDepth): blocksize must be positive");
}

TEST(BadModel, AveragePoolStrideZero) {
  Case c("pool_stride0");
  auto* n = one_op(c, "AveragePool", {1, 1, 4, 4});
  attr_ints(n, "kernel_shape", {2, 2});
  attr_ints(n, "strides", {0, 1});
  expect_error(c.run(), "node 'probe' (AveragePool): kernel_shape [2,2], strides [0,1] and dilations [1,1] must be >= 1");
}

TEST(BadModel, MaxPoolKernelZero) {
  Case c("pool_kernel0");
  attr_ints(one_op(c, "MaxPool", {1, 1, 4, 4}), "kernel_shape", {0, 2});
  expect_error(c.run(), "node 'probe' (MaxPool): kernel_shape [0,2], strides [1,1] and dilations [1,1] must be >= 1");
}

TEST(BadModel, ConvDilationZero) {
  Case c("conv_dil0");
  c.init_f("w", {1, 1, 2, 2});
  attr_ints(one_op(c, "Conv", {1, 1, 4, 4}, {"w"}), "dilations", {0, 1});
  expect_error(c.run(), "node 'probe' (Conv): strides [1,1] and dilations [0,1] must be >= 1");
}

TEST(BadModel, ConvGroupDoesNotDivideChannels) {
  Case c("conv_group");
  c.init_f("w", {2, 1, 1, 1});
  attr_i(one_op(c, "Conv", {1, 3, 4, 4}, {"w"}), "group", 2);
  expect_error(c.run(), "node 'probe' (Conv): X has 3 channels but W expects 1 per group x 2 groups");
}

TEST(BadModel, ConvGroupZero) {
  Case c("conv_group0");
  c.init_f("w", {2, 1, 1, 1});
  attr_i(one_op(c, "Conv", {1, 3, 4, 4}, {"w"}), "group", 0);
  expect_error(c.run(), "node 'probe' (Conv): group must be >= 1, got 0");
}

TEST(BadModel, PadsWrongLength) {
  Case c("pads_len");
  c.init_i64("pads", {1, 1, 1});
  one_op(c, "Pad", {2, 3}, {"pads"});
  expect_error(c.run(), "node 'probe' (Pad): pads has 3 entries, expected 4");
}

TEST(BadModel, PadsHugeNegative) {
  Case c("pads_neg");
  c.init_i64("pads", {-5, 0, 0, 0});
  one_op(c, "Pad", {2, 3}, {"pads"});
  expect_error(c.run(), "node 'probe' (Pad): pads crop more than axis 0 holds");
}

TEST(BadModel, ConcatAxisOutOfRange) {
  Case c("concat_axis");
  c.init_f("w", {2, 3});
  attr_i(one_op(c, "Concat", {2, 3}, {"w"}), "axis", 4);
  expect_error(c.run(), "node 'probe' (Concat): axis 4 is out of range for rank 2");
}

TEST(BadModel, SoftmaxAxisOutOfRange) {
  Case c("softmax_axis");
  attr_i(one_op(c, "Softmax", {2, 3}), "axis", -7);
  expect_error(c.run(), "node 'probe' (Softmax): axis -7 is out of range for rank 2");
}

TEST(BadModel, GatherNegativeIndexOutOfRangeAtRunTime) {
  Case c("gather_neg");
  c.init_i64("idx", {-9});
  one_op(c, "Gather", {-1, 3}, {"idx"});
  expect_error(c.run({"--dim", "N=3"}), "node 'probe' (Gather): index -9 is out of range for an axis of extent 3");
}

TEST(BadModel, GatherElementsIndexOutOfRange) {
  Case c("gather_elements");
  c.init_i64("idx", {0, 5, 1, 0, 0, 0}, {2, 3});
  one_op(c, "GatherElements", {2, 3}, {"idx"});
  expect_error(c.run(), "node 'probe' (GatherElements): index 5 is out of range for an axis of extent 2");
}

TEST(BadModel, GatherNDIndexOutOfRange) {
  Case c("gather_nd");
  c.init_i64("idx", {1, 9}, {1, 2});
  one_op(c, "GatherND", {2, 3}, {"idx"});
  expect_error(c.run(), "node 'probe' (GatherND): index 9 is out of range for an axis of extent 3");
}

TEST(BadModel, ScatterElementsIndexOutOfRange) {
  Case c("scatter_elements");
  c.init_i64("idx", {0, 7}, {1, 2});
  c.init_f("upd", {1, 2});
  one_op(c, "ScatterElements", {2, 3}, {"idx", "upd"});
  expect_error(c.run(), "node 'probe' (ScatterElements): index 7 is out of range for an axis of extent 2");
}

TEST(BadModel, ScatterNDIndexOutOfRange) {
  Case c("scatter_nd");
  c.init_i64("idx", {4}, {1, 1});
  c.init_f("upd", {1, 3});
  one_op(c, "ScatterND", {2, 3}, {"idx", "upd"});
  expect_error(c.run(), "node 'probe' (ScatterND): index 4 is out of range for an axis of extent 2");
}

TEST(BadModel, OneHotNegativeDepth) {
  Case c("onehot_depth");
  c.init_i64("depth", {-3}, {});
  c.init_f("vals", {2});
  c.input("x", {3}, TensorProto::INT64);
  c.node("OneHot", {"x", "depth", "vals"}, {"y"}, "probe");
  c.output("y");
  expect_error(c.run(), "node 'probe' (OneHot): depth must be positive, got -3.000000");
}

TEST(BadModel, ReduceAxisOutOfRange) {
  Case c("reduce_axis");
  attr_ints(one_op(c, "ReduceSum", {2, 3}, {}, TensorProto::FLOAT), "axes", {3});
  c.m.mutable_opset_import(0)->set_version(11);
  expect_error(c.run(), "node 'probe' (ReduceSum): axis 3 is out of range for rank 2");
}

TEST(BadModel, EinsumBadEquation) {
  Case c("einsum");
  attr(one_op(c, "Einsum", {2, 3}), "equation", onnx::AttributeProto::STRING)->set_s("ij,jk->ik");
  expect_error(c.run(), "node 'probe' (Einsum): equation 'ij,jk->ik' has 2 input terms but the node has 1 inputs");
}

TEST(BadModel, CumSumAxisOutOfRange) {
  Case c("cumsum");
  c.init_i64("axis", {5}, {});
  one_op(c, "CumSum", {2, 3}, {"axis"});
  expect_error(c.run(), "node 'probe' (CumSum): axis 5 is out of range for rank 2");
}

TEST(BadModel, LoopBodyWrongInputCount) {
  Case c("loop_body_inputs");
  c.input("x", {2, 3});
  c.init_i64("M", {3}, {});
  auto* n = c.node("Loop", {"M", "", "x"}, {"y"}, "probe");
  onnx::GraphProto body = branch("body", 2);
  *attr(n, "body", onnx::AttributeProto::GRAPH)->mutable_g() = body;
  c.output("y");
  expect_error(c.run(), "node 'probe' (Loop): body takes 0 inputs, expected 3");
}

// ---- limits: int64 overflow in sizes, the memory cap (--memory-cap), Loop iterations ----

TEST(BadModel, GraphInputDimsOverflowInt64) {
  Case c("input_overflow");
  c.input("x", {int64_t{1} << 32, int64_t{1} << 32, 16});
  c.node("Relu", {"x"}, {"y"});
  c.output("y");
  expect_error(c.run(), "graph input 'x': float[4294967296,4294967296,16] overflows int64 in bytes");
}

TEST(BadModel, GraphInputBytesOverflowInt64) {
  // The element count fits in int64; only the byte count (8 per element) does not.
  Case c("input_bytes_overflow");
  c.input("x", {int64_t{1} << 31, int64_t{1} << 31}, TensorProto::DOUBLE);
  c.node("Relu", {"x"}, {"y"});
  c.output("y", TensorProto::DOUBLE);
  expect_error(c.run(), "graph input 'x': double[2147483648,2147483648] overflows int64 in bytes");
}

TEST(BadModel, ConstantOfShapeOverflowsInt64) {
  Case c("constant_of_shape_overflow");
  c.input("x", {2, 3});
  c.init_i64("shape", {int64_t{1} << 32, int64_t{1} << 32, 16});
  c.node("ConstantOfShape", {"shape"}, {"big"}, "giant");
  c.node("Add", {"x", "big"}, {"y"});
  c.output("y");
  expect_error(c.run(), "node 'giant' (ConstantOfShape)");
  expect_error(c.run(), "overflows int64");
}

TEST(BadModel, ExpandToOverflowingShape) {
  Case c("expand_overflow");
  c.init_i64("shape", {int64_t{1} << 32, int64_t{1} << 32, 1});
  c.input("x", {1, 1, 16});
  c.node("Expand", {"x", "shape"}, {"y"}, "probe");
  c.output("y");
  expect_error(c.run(), "node 'probe' (Expand): output 'y': float[4294967296,4294967296,16] overflows int64 in bytes");
}

TEST(BadModel, ReshapeShapeProductOverflowsInt64) {
  // Found by fuzz/fuzz_load: the requested shape's product was multiplied out unchecked.
  Case c("reshape_overflow");
  c.init_i64("shape", {int64_t{1} << 62, 128, -1});
  one_op(c, "Reshape", {2, 3}, {"shape"});
  expect_error(c.run(), "node 'probe' (Reshape): shape overflows int64");
}

TEST(BadModel, SplitOfAScalar) {
  // Found by fuzz/fuzz_compile: shape inference read the axis extent of a rank-0 input.
  Case c("split_scalar");
  one_op(c, "Split", {});
  expect_error(c.run(), "node 'probe' (Split): cannot split a scalar");
}

TEST(BadModel, CompressOfAScalarAlongAnAxis) {
  // Found while auditing the ops that take an axis after SplitOfAScalar: a segfault.
  Case c("compress_scalar");
  c.init_i64("cond", {1});
  auto* n = one_op(c, "Compress", {}, {"cond"});
  auto* a = n->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(0);
  expect_error(c.run(), "node 'probe' (Compress): axis needs an input of rank >= 1");
}

TEST(BadModel, FuzzCrashInputs) {
  // Inputs that crashed fuzz/fuzz_load (docs/reliability.md), kept as they were found.
  int seen = 0;
  for (const auto& e : fs::directory_iterator(source_dir() / "tests/tools/fuzz_crashes")) {
    ++seen;
    CliResult r = run_kiln({"run", e.path().string()});
    EXPECT_EQ(r.exit_code, 2) << e.path() << ": " << r.output;
    EXPECT_EQ(r.output.rfind("kiln: error: ", 0), 0u) << e.path() << ": " << r.output;
  }
  EXPECT_GT(seen, 0);
}

TEST(BadModel, InitializerOverSmallMemoryCap) {
  Case c("init_over_cap");
  c.input("x", {100, 100});
  c.init_f("w", {100, 100});
  c.node("Add", {"x", "w"}, {"y"});
  c.output("y");
  expect_error(c.run({"--memory-cap", "10000"}),
               "initializer 'w': tensor float[100,100] needs 40000 bytes, more than the memory cap of 10000 bytes");
  // The cap also takes size suffixes; 40000 bytes fit in 1 MB.
  auto ok = c.run({"--memory-cap", "1MB"});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

TEST(BadModel, StaticValueOverSmallMemoryCap) {
  // Caught when the session is created: the shapes are static, nothing has run yet.
  Case c("value_over_cap");
  c.init_i64("reps", {100, 100});
  one_op(c, "Tile", {2, 3}, {"reps"});
  expect_error(c.run({"--memory-cap", "100000"}),
               "node 'probe' (Tile): output 'y': float[200,300] needs 240000 bytes, more than the memory cap of 100000 bytes");
}

TEST(BadModel, BoundSymbolicValueOverSmallMemoryCap) {
  // Caught when the plan for the bound input shape is built.
  Case c("bound_over_cap");
  c.init_i64("reps", {100, 100});
  one_op(c, "Tile", {-1, 3}, {"reps"});
  expect_error(c.run({"--memory-cap", "100000", "--dim", "N=2"}),
               "node 'probe' (Tile): output 'y': float[200,300] needs 240000 bytes, more than the memory cap of 100000 bytes");
}

TEST(BadModel, ArenaOverSmallMemoryCap) {
  // Each value fits under the cap; the two live together in the arena do not.
  Case c("arena_over_cap");
  c.input("x", {1000});
  c.init_i64("axis", {0}, {});
  // CumSum: not fused with its neighbours, so both results really live in the arena.
  c.node("CumSum", {"x", "axis"}, {"a"}, "forward");
  attr_i(c.node("CumSum", {"x", "axis"}, {"b"}, "backward"), "reverse", 1);
  c.node("Add", {"a", "b"}, {"y"});
  c.output("y");
  expect_error(c.run({"--memory-cap", "7000", "--level", "0"}), "the arena for input shapes [1000] needs ");
  expect_error(c.run({"--memory-cap", "7000", "--level", "0"}), "more than the memory cap of 7000 bytes");
}

TEST(BadModel, RunTimeAllocationOverSmallMemoryCap) {
  // Range's length depends on an input value: only the run can know the size.
  Case c("runtime_over_cap");
  c.input("n", {}, TensorProto::INT64);
  c.init_i64("start", {0}, {});
  c.init_i64("delta", {1}, {});
  c.node("Range", {"start", "n", "delta"}, {"y"}, "probe");
  c.output("y", TensorProto::INT64);
  onnx_fe::save_tensor_file(Tensor::scalar<int64_t>(10000), "n", c.dir / "n.pb");
  expect_error(c.run({"--memory-cap", "50000", "--input", "n=" + (c.dir / "n.pb").string()}),
               "node 'probe' (Range): output 0: tensor int64[10000] needs 80000 bytes, more than the memory cap of 50000 bytes");
}

namespace {
// A Loop body (iteration, cond, x) -> (cond, Relu(x)) that passes its condition through.
onnx::GraphProto pass_through_body() {
  onnx::GraphProto b;
  b.set_name("body");
  std::vector<int64_t> scalar;
  Case::set_type(b.add_input(), "i", TensorProto::INT64, &scalar);
  Case::set_type(b.add_input(), "cond_in", TensorProto::BOOL, &scalar);
  Case::set_type(b.add_input(), "x_in", TensorProto::FLOAT, nullptr);
  auto add = [&](const std::string& op, const std::string& in, const std::string& out) {
    auto* n = b.add_node();
    n->set_op_type(op);
    n->set_name("body_" + op);
    n->add_input(in);
    n->add_output(out);
  };
  add("Identity", "cond_in", "cond_out");
  add("Relu", "x_in", "x_out");
  Case::set_type(b.add_output(), "cond_out", TensorProto::BOOL, nullptr);
  Case::set_type(b.add_output(), "x_out", TensorProto::FLOAT, nullptr);
  return b;
}
}  // namespace

TEST(BadModel, LoopWithoutTripCountOrCondition) {
  Case c("loop_forever");
  c.input("x", {2, 3});
  auto* n = c.node("Loop", {"", "", "x"}, {"y"}, "forever");
  *attr(n, "body", onnx::AttributeProto::GRAPH)->mutable_g() = pass_through_body();
  c.output("y");
  expect_error(c.run(),
               "node 'forever' (Loop): has neither a trip count (M) nor a condition (cond), so by the ONNX spec it never ends");
}

TEST(BadModel, LoopConditionNeverFalse) {
  Case c("loop_cond_true");
  c.input("x", {2, 3});
  c.init("go", TensorProto::BOOL, {})->add_int32_data(1);
  auto* n = c.node("Loop", {"", "go", "x"}, {"y"}, "spinner");
  *attr(n, "body", onnx::AttributeProto::GRAPH)->mutable_g() = pass_through_body();
  c.output("y");
  expect_error(c.run({"--max-loop-iterations", "1000"}),
               "node 'spinner' (Loop): still running after 1000 iterations, the iteration cap");
}

TEST(BadModel, HugeTripCountStopsAtIterationCap) {
  Case c("loop_huge_m");
  c.input("x", {2, 3});
  c.init_i64("M", {int64_t{1} << 60}, {});
  c.init("go", TensorProto::BOOL, {})->add_int32_data(1);
  auto* n = c.node("Loop", {"M", "go", "x"}, {"y"}, "spinner");
  *attr(n, "body", onnx::AttributeProto::GRAPH)->mutable_g() = pass_through_body();
  c.output("y");
  expect_error(c.run({"--max-loop-iterations", "500"}), "node 'spinner' (Loop): still running after 500 iterations");
}

TEST(BadModel, SubgraphsNestedBeyondProtobufLimit) {
  // About 33 nested Ifs exceed protobuf's parser depth (100 messages) before kiln's own
  // limit could name the graph; the message must still say what is wrong.
  Case c("deeper_nesting");
  c.input("x", {2, 3});
  c.input("cond", {}, TensorProto::BOOL);
  onnx::GraphProto inner = branch("leaf", 1);
  for (int level = 0; level < 60; ++level) {
    onnx::GraphProto outer;
    outer.set_name("level" + std::to_string(level));
    auto* n = outer.add_node();
    n->set_op_type("If");
    n->set_name("if" + std::to_string(level));
    n->add_input("cond");
    n->add_output("o" + std::to_string(level));
    *attr(n, "then_branch", onnx::AttributeProto::GRAPH)->mutable_g() = inner;
    *attr(n, "else_branch", onnx::AttributeProto::GRAPH)->mutable_g() = branch("leaf", 1);
    Case::set_type(outer.add_output(), "o" + std::to_string(level), TensorProto::FLOAT, nullptr);
    inner = outer;
  }
  auto* n = c.node("If", {"cond"}, {"y"}, "top");
  *attr(n, "then_branch", onnx::AttributeProto::GRAPH)->mutable_g() = inner;
  *attr(n, "else_branch", onnx::AttributeProto::GRAPH)->mutable_g() = branch("leaf", 1);
  c.output("y");
  expect_error(c.run(), "not a valid ONNX model: subgraphs nested deeper than 16 (61 levels)");
}

TEST(BadModel, HangIsKilledByTheTestTimeout) {
  // run_kiln's own guard: a loop that would spin for minutes fails the test in seconds.
  Case c("loop_hang");
  c.input("x", {2, 3});
  c.init("go", TensorProto::BOOL, {})->add_int32_data(1);
  auto* n = c.node("Loop", {"", "go", "x"}, {"y"}, "spinner");
  *attr(n, "body", onnx::AttributeProto::GRAPH)->mutable_g() = pass_through_body();
  c.output("y");
  const char* old = std::getenv("KILN_TEST_TIMEOUT");
  std::string saved = old ? old : "";
  setenv("KILN_TEST_TIMEOUT", "1", 1);
  CliResult r = c.run();
  if (old) setenv("KILN_TEST_TIMEOUT", saved.c_str(), 1);
  else unsetenv("KILN_TEST_TIMEOUT");
  EXPECT_EQ(r.exit_code, 124) << r.output;
  EXPECT_NE(r.output.find("timed out"), std::string::npos) << r.output;
}

}  // namespace kiln::testing
