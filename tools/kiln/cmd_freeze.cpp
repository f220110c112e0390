// kiln freeze MODEL.json -o MODEL.pb: writes a TensorFlow model (a TF.js graph model with its
// weight shards, or a frozen .pb) as one frozen binary GraphDef, every weight inside its Const
// node, which `kiln run|check|bench|...` and TensorFlow itself read without the shards.
#include <iostream>

#include "commands.h"
#include "frontend/tf/model_files.h"

namespace kiln::cli {

void add_freeze_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("freeze", "Write a TF.js graph model (model.json + shards) as a frozen binary GraphDef (.pb)");
  struct Args {
    std::string model, out;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("model", args->model, "TF.js model.json (or a frozen .pb)")->required();
  cmd->add_option("-o,--output", args->out, "The .pb to write")->required();
  cmd->callback([args, &exit_code] {
    const tf_fe::TfModel m = tf_fe::read_tf_model(args->model);
    tf_fe::write_frozen_graph(m, args->out);
    std::cout << "wrote " << args->out << " (" << m.graph.node_size() << " nodes)\n";
    exit_code = 0;
  });
}

}  // namespace kiln::cli
