// kiln::optimize_model (include/kiln/optimize.h): import, verify, infer, run the optimizer's
// pipeline for the level, export.
#include <kiln/error.h>
#include <kiln/optimize.h>

#include "frontend/load_model.h"
#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "ir/verifier.h"
#include "ops/core/infer_graph.h"
#include "passes/pipelines.h"

namespace kiln {

namespace {

void check_options(const OptimizeOptions& o) {
  if (o.level < 0 || o.level > 3) throw Error("optimization level must be 0..3, got " + std::to_string(o.level));
  if (o.level > 1 && !o.kiln_ops)
    throw Error("level " + std::to_string(o.level) +
                " writes kiln-domain ops that other runtimes reject; ask for them (kiln_ops) for a model only kiln "
                "runs, or use level 1 (standard ops)");
}

std::string optimized(ir::Graph& g, const OptimizeOptions& o) {
  ir::verify(g);
  ops::ShapeInference().run(g);
  passes::OptimizeOptions po;
  po.level = o.level;
  passes::optimize(g, po);
  return onnx_fe::export_model_bytes(g);
}

}  // namespace

std::string optimize_model(const std::string& path, const OptimizeOptions& options) {
  check_options(options);
  auto g = frontend::load_model(path);
  return optimized(*g, options);
}

std::string optimize_model_bytes(const std::string& model_bytes, const OptimizeOptions& options,
                                 const std::string& model_dir) {
  check_options(options);
  auto g = onnx_fe::load_model_bytes(model_bytes, model_dir);
  return optimized(*g, options);
}

}  // namespace kiln
