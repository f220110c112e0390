// kiln inspect MODEL.onnx: prints the imported IR after shape inference (symbolic dims shown),
// so a user can see what kiln made of the model.
#include <iostream>

#include "commands.h"
#include "frontend/onnx/importer.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ops/core/infer_graph.h"

namespace kiln::cli {

void add_inspect_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("inspect", "Print the model as kiln's IR, with inferred types");
  auto model = std::make_shared<std::string>();
  auto no_infer = std::make_shared<bool>(false);
  cmd->add_option("model", *model, "Model file (.onnx)")->required();
  cmd->add_flag("--no-infer", *no_infer, "Print the types as declared in the file, without kiln's shape inference");
  cmd->callback([model, no_infer, &exit_code] {
    auto g = onnx_fe::load_model(*model);
    ir::verify(*g);
    if (!*no_infer) ops::ShapeInference().run(*g);
    std::cout << ir::print(*g);
    exit_code = 0;
  });
}

}  // namespace kiln::cli
