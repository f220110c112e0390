// Weights kept in one in-memory section (a .kiln file's constants): written once per distinct
// tensor at aligned offsets, read back as views of the section's memory or, without an owner,
// as copies; a damaged reference is a clear error.
#include <gtest/gtest.h>
#include <kiln/error.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <numeric>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/external_section.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/zeroed_memory.h"

namespace kiln::testing {

namespace {

Tensor iota(int64_t n, float start) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return Tensor::from_vector<float>({n}, v);
}

// The section's bytes in 64-byte aligned memory of its own, as a read .kiln file holds them.
onnx_fe::ExternalSection owned_copy(const std::string& bytes) {
  std::shared_ptr<void> mem = allocate_zeroed(bytes.size());
  std::memcpy(mem.get(), bytes.data(), bytes.size());
  return {std::string_view(static_cast<const char*>(mem.get()), bytes.size()), mem};
}

bool inside(const void* p, std::string_view s) {
  const char* c = static_cast<const char*>(p);
  return c >= s.data() && c < s.data() + s.size();
}

}  // namespace

TEST(ExternalSection, EqualTensorsAreStoredOnceAtAlignedOffsets) {
  onnx_fe::ExternalSectionWriter w;
  const Tensor a = iota(100, 0.f), b = iota(100, 0.f), c = iota(37, 5.f);
  EXPECT_EQ(w.add(a), 0u);
  EXPECT_EQ(w.add(b), 0u);  // the same bytes in another buffer
  EXPECT_EQ(w.add(c), 448u);  // 400 bytes rounded up to 64
  EXPECT_EQ(w.add(a), 0u);
  EXPECT_EQ(w.bytes().size(), 448u + 37 * 4);
  EXPECT_EQ(std::memcmp(w.bytes().data() + 448, c.raw(), c.nbytes()), 0);
  EXPECT_FALSE(w.takes(iota(3, 0.f)));  // small ones stay inline
}

TEST(ExternalSection, TensorsReadBackAsViewsOrCopies) {
  onnx_fe::ExternalSectionWriter w;
  const Tensor t = iota(300, 1.f);
  onnx::TensorProto p;
  onnx_fe::tensor_to_proto(t, "w", w, &p);
  ASSERT_EQ(p.data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_FALSE(p.has_raw_data());

  const onnx_fe::ExternalSection owned = owned_copy(w.bytes());
  const Tensor view = onnx_fe::tensor_from_proto(p, ".", "initializer 'w'", std::nullopt, &owned);
  EXPECT_TRUE(inside(view.raw(), owned.bytes));
  EXPECT_EQ(std::memcmp(view.raw(), t.raw(), t.nbytes()), 0);
  EXPECT_EQ(view.dims(), t.dims());

  const onnx_fe::ExternalSection borrowed{w.bytes(), nullptr};  // no owner: copied out
  const Tensor copy = onnx_fe::tensor_from_proto(p, ".", "initializer 'w'", std::nullopt, &borrowed);
  EXPECT_FALSE(inside(copy.raw(), borrowed.bytes));
  EXPECT_EQ(std::memcmp(copy.raw(), t.raw(), t.nbytes()), 0);

  // Small tensors are written inline and read as before.
  onnx::TensorProto small;
  onnx_fe::tensor_to_proto(iota(3, 7.f), "s", w, &small);
  EXPECT_TRUE(small.has_raw_data());
  EXPECT_EQ(onnx_fe::tensor_from_proto(small, ".", "s", std::nullopt, &owned).data<float>()[2], 9.f);
}

TEST(ExternalSection, DamagedReferencesAreClearErrors) {
  onnx_fe::ExternalSectionWriter w;
  onnx::TensorProto p;
  onnx_fe::tensor_to_proto(iota(300, 1.f), "w", w, &p);
  const onnx_fe::ExternalSection owned = owned_copy(w.bytes());
  auto refused = [&](const onnx::TensorProto& q, const onnx_fe::ExternalSection* s, const std::string& says) {
    try {
      onnx_fe::tensor_from_proto(q, ".", "initializer 'w'", std::nullopt, s);
      ADD_FAILURE() << "accepted; expected: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("initializer 'w'"), std::string::npos) << e.what();
    }
  };
  refused(p, nullptr, "none was given");
  onnx::TensorProto far = p;
  far.mutable_external_data(1)->set_value("4096");  // offset
  refused(far, &owned, "lies outside its section");
  onnx::TensorProto longer = p;
  longer.set_dims(0, 301);  // the dims need more bytes than the reference holds
  refused(longer, &owned, "needs");
  onnx::TensorProto negative = p;
  negative.mutable_external_data(2)->set_value("-4");  // length
  refused(negative, &owned, "lies outside its section");
}

// A whole graph through the exporter and importer: the weights in the section, the graph's
// bytes without them, and the imported constants views of the section.
TEST(ExternalSection, GraphsRoundTripWithTheirWeightsInTheSection) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("g");
  for (const char* name : {"a", "b"}) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(256);
    for (int i = 0; i < 256; ++i) t->add_float_data(static_cast<float>(i));
  }
  auto io = [](onnx::ValueInfoProto* vi, const char* name) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(256);
  };
  io(g->add_input(), "x");
  io(g->add_output(), "y");
  auto* n1 = g->add_node();
  n1->set_op_type("Add");
  n1->add_input("x"), n1->add_input("a"), n1->add_output("t");
  auto* n2 = g->add_node();
  n2->set_op_type("Add");
  n2->add_input("t"), n2->add_input("b"), n2->add_output("y");
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  const auto graph = onnx_fe::load_model_bytes(bytes, ".");

  onnx_fe::ExternalSectionWriter w;
  onnx_fe::ExportOptions eo;
  eo.section = &w;
  const std::string skeleton = onnx_fe::export_model_bytes(*graph, eo);
  EXPECT_EQ(w.bytes().size(), 1024u);  // a and b are equal: stored once
  EXPECT_LT(skeleton.size(), 1024u);

  const onnx_fe::ExternalSection owned = owned_copy(w.bytes());
  onnx_fe::ImportOptions io_opts;
  io_opts.section = &owned;
  const auto back = onnx_fe::load_model_bytes(skeleton, ".", io_opts);
  for (const char* name : {"a", "b"}) {
    const ir::Value* v = back->find_value(name);
    ASSERT_TRUE(v && v->is_constant()) << name;
    EXPECT_TRUE(inside(v->constant().raw(), owned.bytes)) << name;
    EXPECT_EQ(v->constant().data<float>()[255], 255.f);
  }
}

}  // namespace kiln::testing
