#!/usr/bin/env bash
# make demo: check a real model (SqueezeNet 1.1, kept in models/) against its reference
# outputs, then run it and print outputs, latency and peak memory.
set -euo pipefail
KILN=${1:-build/kiln}
MODEL=models/squeezenet1_1
echo "== kiln check $MODEL"
"$KILN" check "$MODEL"
echo
echo "== kiln run $MODEL/model.onnx --input input=$MODEL/test_data_set_0/input_0.pb --runs 5"
"$KILN" run "$MODEL/model.onnx" --input "input=$MODEL/test_data_set_0/input_0.pb" --runs 5
