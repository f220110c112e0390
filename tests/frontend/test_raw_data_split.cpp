#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>

#include "frontend/onnx/importer.h"
#include "frontend/onnx/raw_data_split.h"

namespace kiln::testing {

namespace {

onnx::TensorProto raw_tensor(const std::string& name, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(static_cast<int64_t>(values.size()));
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

// y = x + a + b + c: `a` raw, `b` typed floats, `c` raw; an If branch holds an initializer too.
onnx::ModelProto model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("kiln test");  // a field after the graph must survive the split
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("g");
  *g->add_initializer() = raw_tensor("a", {1.f, 2.f, 3.f});
  auto* b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(3);
  for (float v : {10.f, 20.f, 30.f}) b->add_float_data(v);
  *g->add_initializer() = raw_tensor("c", {100.f, 200.f, 300.f});
  auto io = [](onnx::ValueInfoProto* vi, const char* name) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(3);
  };
  io(g->add_input(), "x");
  io(g->add_output(), "y");
  auto* sum = g->add_node();
  sum->set_op_type("Sum");
  for (const char* in : {"x", "a", "b", "c"}) sum->add_input(in);
  sum->add_output("y");
  auto* attr = sum->add_attribute();  // not read by Sum; only carries a subgraph initializer
  attr->set_name("unused_graph");
  attr->set_type(onnx::AttributeProto::GRAPH);
  *attr->mutable_g()->add_initializer() = raw_tensor("inner", {7.f});
  return m;
}

std::string as_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

}  // namespace

TEST(RawDataSplit, CutsTheMainGraphsRawDataAndKeepsTheRest) {
  std::string bytes;
  model().SerializeToString(&bytes);
  const auto split = onnx_fe::split_raw_data(bytes);
  ASSERT_TRUE(split.has_value());
  ASSERT_EQ(split->raw.size(), 3u);
  ASSERT_TRUE(split->raw[0].has_value());
  EXPECT_EQ(std::string(*split->raw[0]), as_bytes({1.f, 2.f, 3.f}));
  EXPECT_FALSE(split->raw[1].has_value());  // typed data stays in the skeleton
  ASSERT_TRUE(split->raw[2].has_value());
  EXPECT_EQ(std::string(*split->raw[2]), as_bytes({100.f, 200.f, 300.f}));
  // The views point into the original bytes: nothing was copied.
  EXPECT_GE(split->raw[0]->data(), bytes.data());
  EXPECT_LE(split->raw[2]->data() + split->raw[2]->size(), bytes.data() + bytes.size());

  onnx::ModelProto skeleton;
  ASSERT_TRUE(skeleton.ParseFromString(split->skeleton));
  EXPECT_LT(split->skeleton.size(), bytes.size());
  onnx::ModelProto want = model();
  for (auto& t : *want.mutable_graph()->mutable_initializer()) t.clear_raw_data();
  EXPECT_EQ(skeleton.SerializeAsString(), want.SerializeAsString());  // the subgraph's raw data stays
}

namespace {
// A length-delimited field with a one-byte tag and a varint length.
std::string field(char tag, const std::string& payload) {
  std::string len;
  for (size_t n = payload.size();; n >>= 7) {
    len += static_cast<char>((n & 0x7f) | (n >= 128 ? 0x80 : 0));
    if (n < 128) break;
  }
  return std::string(1, tag) + len + payload;
}
}  // namespace

TEST(RawDataSplit, TheLastRawDataFieldWinsAsInProtobuf) {
  // Serializing a message never repeats a field, so the bytes are put together by hand: a
  // TensorProto with two raw_data fields (tag 0x4a), as the only initializer (tag 0x2a) of
  // the graph (tag 0x3a).
  onnx::TensorProto second;
  second.set_raw_data(as_bytes({4.f, 5.f, 6.f}));
  const std::string tensor = raw_tensor("a", {1.f, 2.f, 3.f}).SerializeAsString() + second.SerializeAsString();
  onnx::ModelProto m = model();
  m.clear_graph();
  const std::string bytes = m.SerializeAsString() + field('\x3a', field('\x2a', tensor));

  const auto split = onnx_fe::split_raw_data(bytes);
  ASSERT_TRUE(split.has_value());
  ASSERT_EQ(split->raw.size(), 1u);
  ASSERT_TRUE(split->raw[0].has_value());
  EXPECT_EQ(std::string(*split->raw[0]), as_bytes({4.f, 5.f, 6.f}));
  onnx::ModelProto whole;
  ASSERT_TRUE(whole.ParseFromString(bytes));
  EXPECT_EQ(whole.graph().initializer(0).raw_data(), as_bytes({4.f, 5.f, 6.f}));
}

TEST(RawDataSplit, MalformedBytesAreLeftToTheWholeParse) {
  std::string bytes;
  model().SerializeToString(&bytes);
  EXPECT_FALSE(onnx_fe::split_raw_data(bytes.substr(0, bytes.size() / 2)).has_value());
  EXPECT_FALSE(onnx_fe::split_raw_data(std::string("\xff\xff\xff\xff", 4)).has_value());
  EXPECT_FALSE(onnx_fe::split_raw_data("").has_value());  // no graph
  EXPECT_FALSE(onnx_fe::split_raw_data(bytes + bytes).has_value());  // two graph fields
}

TEST(RawDataSplit, ImportedValuesMatchTheWholeParse) {
  std::string bytes;
  model().SerializeToString(&bytes);
  auto g = onnx_fe::load_model_bytes(bytes, ".");
  auto values = [&](const char* name) {
    const Tensor& t = g->find_value(name)->constant();
    return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
  };
  EXPECT_EQ(values("a"), (std::vector<float>{1.f, 2.f, 3.f}));
  EXPECT_EQ(values("b"), (std::vector<float>{10.f, 20.f, 30.f}));
  EXPECT_EQ(values("c"), (std::vector<float>{100.f, 200.f, 300.f}));
}

}  // namespace kiln::testing
