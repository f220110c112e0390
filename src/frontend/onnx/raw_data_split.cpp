#include "frontend/onnx/raw_data_split.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>

#include <cstdint>

namespace kiln::onnx_fe {

namespace {

namespace pb = google::protobuf;
using WFL = pb::internal::WireFormatLite;

// Calls visit(field number, the whole field's bytes, its payload when length-delimited) for
// each field of the message `msg`, in order; false when `msg` is malformed or `visit` says so.
template <typename Visit>
bool for_each_field(std::string_view msg, Visit&& visit) {
  pb::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(msg.data()), static_cast<int>(msg.size()));
  while (true) {
    const int start = in.CurrentPosition();
    if (static_cast<size_t>(start) == msg.size()) return true;
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return false;
    std::string_view payload;
    if (WFL::GetTagWireType(tag) == WFL::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t len = 0;
      if (!in.ReadVarint32(&len)) return false;
      const size_t at = static_cast<size_t>(in.CurrentPosition());
      if (len > msg.size() - at) return false;
      payload = msg.substr(at, len);
      if (!in.Skip(static_cast<int>(len))) return false;
    } else if (!WFL::SkipField(&in, tag)) {
      return false;
    }
    const size_t end = static_cast<size_t>(in.CurrentPosition());
    if (!visit(WFL::GetTagFieldNumber(tag), msg.substr(start, end - start), payload)) return false;
  }
}

// A length-delimited field `number` holding `payload`, appended to `out`.
void append_field(std::string& out, int number, std::string_view payload) {
  uint8_t head[10];  // two varint32s of at most 5 bytes
  uint8_t* p = pb::io::CodedOutputStream::WriteVarint32ToArray(
      WFL::MakeTag(number, WFL::WIRETYPE_LENGTH_DELIMITED), head);
  p = pb::io::CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(payload.size()), p);
  out.append(reinterpret_cast<const char*>(head), static_cast<size_t>(p - head));
  out.append(payload);
}

bool split_tensor(std::string_view tensor, std::string& out, std::optional<std::string_view>& raw) {
  return for_each_field(tensor, [&](int number, std::string_view field, std::string_view payload) {
    if (number == onnx::TensorProto::kRawDataFieldNumber && !payload.data()) return false;  // not bytes
    if (number == onnx::TensorProto::kRawDataFieldNumber) raw = payload;  // the last one wins, as in protobuf
    else out.append(field);
    return true;
  });
}

bool split_graph(std::string_view graph, std::string& out, RawDataSplit& split) {
  return for_each_field(graph, [&](int number, std::string_view field, std::string_view payload) {
    if (number != onnx::GraphProto::kInitializerFieldNumber) {
      out.append(field);
      return true;
    }
    if (!payload.data()) return false;
    std::string tensor;
    std::optional<std::string_view> raw;
    if (!split_tensor(payload, tensor, raw)) return false;
    split.raw.push_back(raw);
    append_field(out, number, tensor);
    return true;
  });
}

}  // namespace

std::optional<RawDataSplit> split_raw_data(std::string_view bytes) {
  RawDataSplit split;
  split.skeleton.reserve(4096);
  int graphs = 0;
  const bool ok = for_each_field(bytes, [&](int number, std::string_view field, std::string_view payload) {
    if (number != onnx::ModelProto::kGraphFieldNumber) {
      split.skeleton.append(field);
      return true;
    }
    // Two graph fields would merge in protobuf; rare enough to leave to the plain parse.
    if (!payload.data() || ++graphs > 1) return false;
    std::string graph;
    if (!split_graph(payload, graph, split)) return false;
    append_field(split.skeleton, number, graph);
    return true;
  });
  if (!ok || graphs != 1) return std::nullopt;
  return split;
}

}  // namespace kiln::onnx_fe
