// Runs an ONNX model folder's first test data set with kiln and checks the result:
//   squeezenet MODEL_DIR   (model.onnx + test_data_set_0/input_0.pb, output_0.pb)
// Exits 0 when every output element is within 1e-4 + 1e-3 * |expected|, else 1.
#include <kiln/session.h>

#include <cmath>
#include <iostream>

#include "onnx_tensor.h"

int main(int argc, char** argv) try {
  if (argc != 2) return std::cerr << "usage: " << argv[0] << " MODEL_DIR\n", 2;
  const std::string dir = argv[1];
  auto session = kiln::Session::create(dir + "/model.onnx");
  kiln::Tensor input = read_onnx_tensor(dir + "/test_data_set_0/input_0.pb");
  kiln::Tensor expected = read_onnx_tensor(dir + "/test_data_set_0/output_0.pb");
  kiln::Tensor output = session->run(std::vector<kiln::Tensor>{input}).at(0);

  if (output.dims() != expected.dims()) return std::cerr << "shape " << output.describe() << "\n", 1;
  const float *got = output.data<float>(), *want = expected.data<float>();
  int64_t bad = 0;
  for (int64_t i = 0; i < output.numel(); ++i) bad += !(std::fabs(got[i] - want[i]) <= 1e-4f + 1e-3f * std::fabs(want[i]));
  std::cout << session->inputs()[0].str() << " -> " << output.describe() << ": " << bad << " of "
            << output.numel() << " elements off the reference\n";
  return bad == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
