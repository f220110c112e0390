// kiln's Python module (kiln._kiln): an ONNX Runtime-style InferenceSession over kiln::Session,
// built against the installed library (<kiln/session.h>, libkiln). Inputs are numpy arrays,
// read in place when C-contiguous and of the input's dtype; outputs are numpy arrays that own
// kiln's result tensors (no copy). The GIL is released while a model runs; kiln's errors are
// raised as kiln.Error carrying kiln's message.
#include <kiln/error.h>
#include <kiln/optimize.h>
#include <kiln/session.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <string>
#include <ctime>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>

namespace py = pybind11;

namespace {

// The numpy dtype of a kiln element type; a kiln::Error for one numpy has no array of.
py::dtype numpy_dtype(kiln::DType t) {
  switch (t) {
    case kiln::DType::Float: return py::dtype::of<float>();
    case kiln::DType::Double: return py::dtype::of<double>();
    case kiln::DType::Int8: return py::dtype::of<int8_t>();
    case kiln::DType::UInt8: return py::dtype::of<uint8_t>();
    case kiln::DType::Int16: return py::dtype::of<int16_t>();
    case kiln::DType::UInt16: return py::dtype::of<uint16_t>();
    case kiln::DType::Int32: return py::dtype::of<int32_t>();
    case kiln::DType::UInt32: return py::dtype::of<uint32_t>();
    case kiln::DType::Int64: return py::dtype::of<int64_t>();
    case kiln::DType::UInt64: return py::dtype::of<uint64_t>();
    case kiln::DType::Bool: return py::dtype::of<bool>();
    case kiln::DType::Float16: return py::dtype("float16");
    default: throw kiln::Error("numpy has no array of " + kiln::dtype_name(t) + " elements");
  }
}

kiln::DType kiln_dtype(const py::dtype& d) {
  for (kiln::DType t : {kiln::DType::Float, kiln::DType::Double, kiln::DType::Int8, kiln::DType::UInt8, kiln::DType::Int16,
                        kiln::DType::UInt16, kiln::DType::Int32, kiln::DType::UInt32, kiln::DType::Int64,
                        kiln::DType::UInt64, kiln::DType::Bool, kiln::DType::Float16})
    if (numpy_dtype(t).is(d) || numpy_dtype(t).equal(d)) return t;
  throw kiln::Error("numpy dtype " + py::repr(d).cast<std::string>() + " has no kiln element type");
}

// A numpy array owning `t` (moved to the heap; freed with the array).
py::array to_numpy(kiln::Tensor t) {
  if (t.kind() != kiln::ValueKind::Tensor) throw kiln::Error("an output that is not a tensor (a sequence or None)");
  auto* owned = new kiln::Tensor(std::move(t));
  py::capsule base(owned, [](void* p) { delete static_cast<kiln::Tensor*>(p); });
  std::vector<py::ssize_t> shape(owned->dims().begin(), owned->dims().end());
  return py::array(numpy_dtype(owned->dtype()), shape, owned->raw(), base);
}

struct NodeArg {
  std::string name, type;
  py::list shape;
};

NodeArg node_arg(const kiln::TensorInfo& i) {
  NodeArg a;
  a.name = i.name;
  a.type = (i.is_sequence ? "seq(tensor(" : "tensor(") + kiln::dtype_name(i.dtype) + (i.is_sequence ? "))" : ")");
  for (size_t d = 0; d < i.dims.size(); ++d) {
    if (i.dims[d] >= 0) a.shape.append(i.dims[d]);
    else if (d < i.symbols.size() && !i.symbols[d].empty() && i.symbols[d] != "?") a.shape.append(i.symbols[d]);
    else a.shape.append(py::none());
  }
  return a;
}

// ORT's GraphOptimizationLevel values.
enum class GraphOptimizationLevel { ORT_DISABLE_ALL = 0, ORT_ENABLE_BASIC = 1, ORT_ENABLE_EXTENDED = 2, ORT_ENABLE_ALL = 99 };

struct PySessionOptions {
  int intra_op_num_threads = 0;  // 0: every core, as ORT
  int inter_op_num_threads = 0;  // accepted; kiln runs one op at a time
  GraphOptimizationLevel graph_optimization_level = GraphOptimizationLevel::ORT_ENABLE_ALL;
  bool enable_profiling = false;
  std::string profile_file_prefix = "kiln_profile";
  int fusion_level = 3;
  std::string backend = "cpu";

  kiln::SessionOptions kiln() const {
    kiln::SessionOptions o;
    if (enable_profiling) {
      // As ONNX Runtime names it: PREFIX_<date>_<time>.json.
      char stamp[32];
      const std::time_t now = std::time(nullptr);
      std::strftime(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S", std::localtime(&now));
      o.profile_file = profile_file_prefix + "_" + stamp + ".json";
    }
    const unsigned cores = std::thread::hardware_concurrency();
    o.threads = intra_op_num_threads > 0 ? intra_op_num_threads : static_cast<int>(cores > 0 ? cores : 1);
    switch (graph_optimization_level) {
      case GraphOptimizationLevel::ORT_DISABLE_ALL: o.opt_level = 0; break;
      case GraphOptimizationLevel::ORT_ENABLE_BASIC: o.opt_level = 1; break;
      case GraphOptimizationLevel::ORT_ENABLE_EXTENDED: o.opt_level = 2; break;
      case GraphOptimizationLevel::ORT_ENABLE_ALL: o.opt_level = 3; break;
    }
    o.fusion_level = fusion_level;
    o.backend = backend;
    return o;
  }
};

const std::vector<std::string>& providers() {
  static const std::vector<std::string> p = {"CPUExecutionProvider"};
  return p;
}

class InferenceSession {
 public:
  InferenceSession(const py::object& model, const std::optional<PySessionOptions>& options,
                   const std::optional<std::vector<std::string>>& requested) {
    if (requested)
      for (const std::string& p : *requested)
        if (p != "CPUExecutionProvider")
          throw kiln::Error("provider '" + p + "' is not available (kiln.get_available_providers(): CPUExecutionProvider)");
    options_ = options.value_or(PySessionOptions{});
    const kiln::SessionOptions o = options_.kiln();
    if (py::isinstance<py::bytes>(model)) {
      const std::string bytes = model.cast<std::string>();
      py::gil_scoped_release release;
      session_ = kiln::Session::create_from_bytes(bytes, o);
    } else {
      const std::string path = py::str(model).cast<std::string>();
      py::gil_scoped_release release;
      session_ = kiln::Session::create(path, o);
    }
  }

  std::vector<NodeArg> inputs() const {
    std::vector<NodeArg> v;
    for (const auto& i : session_->inputs()) v.push_back(node_arg(i));
    return v;
  }
  std::vector<NodeArg> outputs() const {
    std::vector<NodeArg> v;
    for (const auto& i : session_->outputs()) v.push_back(node_arg(i));
    return v;
  }

  py::list run(const std::optional<std::vector<std::string>>& output_names, const py::dict& feed, const py::object&) {
    std::map<std::string, kiln::Tensor> inputs;
    std::vector<py::array> keep_alive;  // arrays whose memory the tensors read in place
    for (const auto& [key, value] : feed) {
      const std::string name = py::str(key).cast<std::string>();
      const kiln::TensorInfo* info = nullptr;
      for (const auto& i : session_->inputs())
        if (i.name == name) info = &i;
      if (!info) {
        std::string names;
        for (const auto& i : session_->inputs()) names += (names.empty() ? "'" : ", '") + i.name + "'";
        throw kiln::Error("the model has no input named '" + name + "' (its inputs: " + names + ")");
      }
      // An array of another element type is refused, as ONNX Runtime refuses it; a list or
      // another Python sequence is converted. Read in place when C-contiguous, else copied so.
      if (py::isinstance<py::array>(value) && !py::reinterpret_borrow<py::array>(value).dtype().equal(numpy_dtype(info->dtype)))
        throw kiln::Error("input '" + name + "': expected tensor(" + kiln::dtype_name(info->dtype) + "), got an array of " +
                          py::repr(py::reinterpret_borrow<py::array>(value).dtype()).cast<std::string>());
      py::array a = py::module_::import("numpy").attr("ascontiguousarray")(value, numpy_dtype(info->dtype));
      std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
      inputs[name] = kiln::Tensor::wrap(kiln_dtype(a.dtype()), dims, const_cast<void*>(a.data()));
      keep_alive.push_back(a);
    }
    std::map<std::string, kiln::Tensor> outs;
    {
      py::gil_scoped_release release;
      outs = session_->run(inputs);
    }
    std::vector<std::string> names;
    if (output_names && !output_names->empty()) names = *output_names;
    else
      for (const auto& o : session_->outputs()) names.push_back(o.name);
    py::list result;
    for (const std::string& n : names) {
      auto it = outs.find(n);
      if (it == outs.end()) throw kiln::Error("the model has no output named '" + n + "'");
      result.append(to_numpy(std::move(it->second)));
    }
    return result;
  }

  const PySessionOptions& options() const { return options_; }
  // The trace's path ("" when the session was made without enable_profiling).
  std::string end_profiling() { return session_->end_profiling(); }

 private:
  PySessionOptions options_;
  std::unique_ptr<kiln::Session> session_;
};

}  // namespace

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "kiln: a deep-learning compiler and inference engine (ONNX Runtime-style API)";
  static py::exception<kiln::Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const kiln::Error& e) {
      error(e.what());
    }
  });

  py::enum_<GraphOptimizationLevel>(m, "GraphOptimizationLevel")
      .value("ORT_DISABLE_ALL", GraphOptimizationLevel::ORT_DISABLE_ALL)
      .value("ORT_ENABLE_BASIC", GraphOptimizationLevel::ORT_ENABLE_BASIC)
      .value("ORT_ENABLE_EXTENDED", GraphOptimizationLevel::ORT_ENABLE_EXTENDED)
      .value("ORT_ENABLE_ALL", GraphOptimizationLevel::ORT_ENABLE_ALL);

  py::class_<PySessionOptions>(m, "SessionOptions")
      .def(py::init<>())
      .def_readwrite("intra_op_num_threads", &PySessionOptions::intra_op_num_threads)
      .def_readwrite("inter_op_num_threads", &PySessionOptions::inter_op_num_threads)
      .def_readwrite("graph_optimization_level", &PySessionOptions::graph_optimization_level)
      .def_readwrite("enable_profiling", &PySessionOptions::enable_profiling)
      .def_readwrite("profile_file_prefix", &PySessionOptions::profile_file_prefix)
      .def_readwrite("fusion_level", &PySessionOptions::fusion_level)
      .def_readwrite("backend", &PySessionOptions::backend);

  py::class_<NodeArg>(m, "NodeArg")
      .def_readonly("name", &NodeArg::name)
      .def_readonly("type", &NodeArg::type)
      .def_readonly("shape", &NodeArg::shape)
      .def("__repr__", [](const NodeArg& a) {
        return "NodeArg(name='" + a.name + "', type='" + a.type + "', shape=" + std::string(py::repr(a.shape)) + ")";
      });

  py::class_<InferenceSession>(m, "InferenceSession")
      .def(py::init<const py::object&, const std::optional<PySessionOptions>&, const std::optional<std::vector<std::string>>&>(),
           py::arg("path_or_bytes"), py::arg("sess_options") = py::none(), py::arg("providers") = py::none())
      .def("get_inputs", &InferenceSession::inputs)
      .def("get_outputs", &InferenceSession::outputs)
      .def("get_providers", [](const InferenceSession&) { return providers(); })
      .def("get_session_options", &InferenceSession::options)
      .def("end_profiling", &InferenceSession::end_profiling)
      .def("run", &InferenceSession::run, py::arg("output_names"), py::arg("input_feed"),
           py::arg("run_options") = py::none());

  m.def("get_available_providers", &providers);
  m.def("get_device", [] { return std::string("CPU"); });
  m.def(
      "compile",
      [](const std::string& model, const std::string& output, int threads) {
        kiln::SessionOptions o;
        o.threads = threads;
        py::gil_scoped_release release;
        auto s = kiln::Session::create(model, o);
        std::vector<std::vector<int64_t>> dims;
        bool fixed = true;
        for (const auto& i : s->inputs()) {
          for (int64_t d : i.dims) fixed = fixed && d >= 0;
          dims.push_back(i.dims);
        }
        if (fixed) s->prepare(dims);
        s->save(output);
      },
      py::arg("model"), py::arg("output"), py::arg("threads") = 1,
      "Compiles a model ahead of time into a .kiln file (as `kiln compile`), which InferenceSession loads.");
  m.def(
      "optimize",
      [](const py::object& model, const std::optional<std::string>& output, int level, bool kiln_ops) {
        kiln::OptimizeOptions o;
        o.level = level;
        o.kiln_ops = kiln_ops;
        std::string result;
        if (py::isinstance<py::bytes>(model)) {
          const std::string bytes = model.cast<std::string>();
          py::gil_scoped_release release;
          result = kiln::optimize_model_bytes(bytes, o);
        } else {
          const std::string path = py::str(model).cast<std::string>();
          py::gil_scoped_release release;
          result = kiln::optimize_model(path, o);
        }
        if (output) {
          py::gil_scoped_release release;
          std::ofstream f(*output, std::ios::binary | std::ios::trunc);
          f.write(result.data(), static_cast<std::streamsize>(result.size()));
          if (!f) throw kiln::Error("cannot write '" + *output + "'");
        }
        return py::bytes(result);
      },
      py::arg("model"), py::arg("output") = py::none(), py::arg("level") = 1, py::arg("kiln_ops") = false,
      "Optimizes a model's graph (as `kiln optimize`) and returns it as ONNX bytes, also written to `output` when "
      "given. Level 1 (the default) writes only standard ONNX ops, which any ONNX runtime loads; levels 2-3 write "
      "kiln-domain fused ops and need kiln_ops=True.");
}
