#include <gtest/gtest.h>
#include <kiln/error.h>
#include <kiln/limits.h>
#include <kiln/tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace {

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Tensor, AllocatesZeroedAndAligned) {
  Tensor t(DType::Float, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.rank(), 2);
  EXPECT_EQ(t.dim(1), 3);
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
  EXPECT_EQ(t.describe(), "float[2,3]");
}

TEST(Tensor, EmptyAndScalar) {
  Tensor e(DType::Int64, {0, 5});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.nbytes(), 0u);
  EXPECT_NE(e.raw(), nullptr);
  Tensor s = Tensor::scalar<int32_t>(7);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.as_int64(0), 7);
  EXPECT_EQ(s.describe(), "int32[]");
  EXPECT_FALSE(Tensor().defined());
}

TEST(Tensor, FromVectorAndTypedAccess) {
  Tensor t = Tensor::from_vector<int64_t>({3}, {4, -1, 9});
  EXPECT_EQ(t.dtype(), DType::Int64);
  EXPECT_EQ(t.to_int64_vector(), (std::vector<int64_t>{4, -1, 9}));
  EXPECT_DOUBLE_EQ(t.as_double(1), -1.0);
  EXPECT_THROW(t.data<float>(), Error);
  EXPECT_NE(error_of([&] { t.data<int32_t>(); }).find("int64"), std::string::npos);

  Tensor h = Tensor::from_vector<Float16>({2}, {Float16(1.5f), Float16(-0.25f)});
  EXPECT_DOUBLE_EQ(h.as_double(0), 1.5);
  EXPECT_DOUBLE_EQ(h.as_double(1), -0.25);
  Tensor b = Tensor::from_vector<bool>({2}, {true, false});
  EXPECT_EQ(b.as_int64(0), 1);
  EXPECT_EQ(b.as_int64(1), 0);
}

TEST(Tensor, ReshapeSharesBuffer) {
  Tensor t = Tensor::from_vector<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor r = t.reshaped({3, 2});
  EXPECT_EQ(r.dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(r.raw(), t.raw());
  r.data<float>()[5] = 50;
  EXPECT_EQ(t.data<float>()[5], 50);
  EXPECT_EQ(t.reshaped({6}).rank(), 1);
  EXPECT_EQ(t.reshaped({1, 6, 1}).numel(), 6);
  EXPECT_THROW(t.reshaped({4, 2}), Error);
  EXPECT_THROW(t.reshaped({-2, -3}), Error);
}

TEST(Tensor, CloneIsDeep) {
  Tensor t = Tensor::from_vector<int32_t>({2}, {1, 2});
  Tensor c = t.clone();
  EXPECT_NE(c.raw(), t.raw());
  c.data<int32_t>()[0] = 10;
  EXPECT_EQ(t.data<int32_t>()[0], 1);
  EXPECT_EQ(c.data<int32_t>()[1], 2);

  Tensor s = Tensor::from_vector<std::string>({2}, {"a", "bc"});
  Tensor sc = s.clone();
  sc.data<std::string>()[0] = "z";
  EXPECT_EQ(s.data<std::string>()[0], "a");
  EXPECT_EQ(sc.data<std::string>()[1], "bc");
}

TEST(Tensor, CopiesShareBuffer) {
  Tensor t(DType::Float, {4});
  Tensor u = t;
  u.data<float>()[2] = 3;
  EXPECT_EQ(t.data<float>()[2], 3);
}

TEST(Tensor, Wrap) {
  float buf[4] = {1, 2, 3, 4};
  Tensor t = Tensor::wrap(DType::Float, {2, 2}, buf);
  EXPECT_EQ(t.raw(), buf);
  EXPECT_EQ(t.as_double(3), 4.0);
  EXPECT_THROW(Tensor::wrap(DType::Float, {-1}, buf), Error);
}

TEST(Tensor, BadDims) {
  EXPECT_NE(error_of([] { Tensor(DType::Float, {2, -3}); }).find("negative dimension -3"), std::string::npos);
  EXPECT_THROW(Tensor(DType::Undefined, {2}), Error);
}

TEST(Tensor, AbsurdSizes) {
  const int64_t big = int64_t{1} << 40;
  EXPECT_NE(error_of([&] { Tensor(DType::Float, {big, big}); }).find("overflows"), std::string::npos);
  EXPECT_NE(error_of([&] { Tensor(DType::Double, {big}); }).find("more than the memory cap"), std::string::npos);
  EXPECT_NE(error_of([&] { Tensor(DType::String, {big}); }).find("more than the memory cap"), std::string::npos);
  // A zero extent makes the product 0, even beside huge ones.
  EXPECT_EQ(Tensor(DType::Float, {0, big, big}).numel(), 0);
}

TEST(Tensor, MemoryCapScope) {
  Limits small;
  small.memory_cap_bytes = 1000;
  {
    LimitsScope scope(small);
    EXPECT_EQ(Tensor(DType::Float, {250}).numel(), 250);
    EXPECT_EQ(error_of([] { Tensor(DType::Float, {251}); }),
              "tensor float[251] needs 1004 bytes, more than the memory cap of 1000 bytes");
  }
  EXPECT_EQ(current_limits().memory_cap_bytes, default_memory_cap_bytes());
  EXPECT_EQ(Tensor(DType::Float, {251}).numel(), 251);
  EXPECT_LE(default_memory_cap_bytes(), int64_t{16} << 30);
}

}  // namespace
}  // namespace kiln
