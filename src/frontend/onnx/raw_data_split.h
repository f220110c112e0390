// Cuts the weights out of a serialized ModelProto before protobuf parses it. Parsing copies
// every bytes field into a std::string of its own; for the raw_data of the main graph's
// initializers (nearly all of a model's size) that is a copy of the weights in fresh pages,
// which the importer then copies again into aligned tensors. With the split, the importer
// parses a skeleton without them and copies each initializer once, from where it lies in the
// file's bytes: the parse then touches almost no fresh memory, which matters where page faults
// are dear.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::onnx_fe {

struct RawDataSplit {
  std::string skeleton;  // the ModelProto with those raw_data fields removed
  // Per initializer of the main graph, in order: its raw_data, a view into the original bytes
  // (nullopt when it has none: typed fields or external data, left in the skeleton).
  std::vector<std::optional<std::string_view>> raw;
};

// nullopt when `bytes` cannot be walked as a ModelProto with one graph; the caller then parses
// them whole, and protobuf reports what is wrong.
std::optional<RawDataSplit> split_raw_data(std::string_view bytes);

}  // namespace kiln::onnx_fe
