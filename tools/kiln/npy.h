// numpy's files as the CLI's inputs and outputs: .npy (one array) and .npz (np.savez and
// np.savez_compressed: several, by name), little-endian numbers and bool, C order.
#pragma once
#include <kiln/tensor.h>

#include <map>
#include <string>

namespace kiln::cli {

// A kiln::Error naming the file for anything it cannot read.
Tensor load_npy(const std::string& path);
std::map<std::string, Tensor> load_npz(const std::string& path);
void save_npy(const Tensor& t, const std::string& path);

}  // namespace kiln::cli
