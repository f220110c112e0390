// TensorFlow TensorProto <-> kiln::Tensor.
#pragma once
#include <kiln/tensor.h>

#include <string>

#include "frontend/tf/graph_def.pb.h"

namespace kiln::tf_fe {

// The tensor a Const node's `value` holds: tensor_content (little-endian, row major) or the
// typed repeated field, where fewer values than elements repeat the last one (none: zeros).
// `what` names the node in errors.
kiln::Tensor tensor_from_proto(const tfpb::TensorProto& p, const std::string& what);

// The static dims of a TensorShapeProto; fails naming `what` on unknown rank or dims.
std::vector<int64_t> static_dims(const tfpb::TensorShapeProto& s, const std::string& what);

// Fills p's tensor_content from t (t's dtype and dims must match p's).
void set_tensor_content(tfpb::TensorProto& p, const kiln::Tensor& t);

}  // namespace kiln::tf_fe
