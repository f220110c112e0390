"""The ONNX Runtime script a user has, run unchanged with `import kiln as ort`, gives ONNX
Runtime's own outputs (onnxruntime-node on the same input files; ../shared/peers/setup.sh
installs it). Without the peer the test skips, and fails under CI=true."""
import json
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = pathlib.Path(os.environ.get("KILN_REPO", HERE.parents[1]))
SHARED_MODELS = pathlib.Path(os.environ.get("KILN_SHARED_MODELS", REPO.parent / "shared" / "models"))
PEERS = SHARED_MODELS.parent / "peers"
ORT_NODE = pathlib.Path(os.environ.get("ORT_NODE_MODULE",
                                       pathlib.Path(os.environ.get("PEERS_NPM_PREFIX", "/opt/peers"))
                                       / "node_modules" / "onnxruntime-node"))


def need_peer():
    missing = [what for what, ok in (("node", shutil.which("node")), (str(ORT_NODE), ORT_NODE.exists()),
                                     (str(PEERS / "tensorproto.js"), (PEERS / "tensorproto.js").exists())) if not ok]
    if missing:
        message = "no ONNX Runtime peer: " + ", ".join(missing) + " (bash ../shared/peers/setup.sh)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


def ort_outputs(model, inputs, tmp):
    env = dict(os.environ, KILN_SHARED_PEERS=str(PEERS), ORT_NODE_MODULE=str(ORT_NODE))
    subprocess.run(["node", str(HERE / "ort_outputs.js"), str(model), str(tmp)] + [str(p) for p in inputs],
                   check=True, env=env, timeout=300)
    meta = json.loads((tmp / "outputs.json").read_text())
    kinds = {"float32": np.float32, "int64": np.int64, "int32": np.int32, "bool": np.bool_, "float64": np.float64}
    return [np.fromfile(tmp / f"output_{k}.bin", dtype=kinds[m["type"]]).reshape(m["dims"]) for k, m in enumerate(meta)]


def onnxruntime_style_script(model, input_files):
    """What a user of ONNX Runtime writes, with only the import changed."""
    import kiln as ort
    import onnx
    from onnx import numpy_helper

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(model), sess_options=so, providers=["CPUExecutionProvider"])
    feed = {}
    for arg, f in zip(sess.get_inputs(), input_files):
        t = onnx.TensorProto()
        t.ParseFromString(pathlib.Path(f).read_bytes())
        feed[arg.name] = numpy_helper.to_array(t)
    return sess.run(None, feed)


def model_dir(name):
    """The model's folder (this repository's models/ first); missing: a skip, a failure under CI."""
    d = next((b / name for b in (REPO / "models", SHARED_MODELS) if (b / name / "model.onnx").exists()), None)
    if d is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"model {name} missing")
        pytest.skip(f"no model {name}")
    return d


@pytest.mark.parametrize("name", ["squeezenet1_1", "bert_tiny_op13"])
def test_same_outputs_as_onnxruntime(name, tmp_path):
    need_peer()
    d = model_dir(name)
    inputs = sorted((d / "test_data_set_0").glob("input_*.pb"))
    ours = onnxruntime_style_script(d / "model.onnx", inputs)
    theirs = ort_outputs(d / "model.onnx", inputs, tmp_path)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)


def shared_models():
    found = sorted({p.parent.name for base in (REPO / "models", SHARED_MODELS) for p in base.glob("*/model.onnx")})
    return found or ["squeezenet1_1"]


@pytest.mark.parametrize("name", shared_models())
def test_optimized_model_loads_and_matches_in_onnxruntime(name, tmp_path):
    """kiln.optimize's default output (standard ops) for every shared model: ONNX Runtime loads
    it and gives the model's reference outputs."""
    need_peer()
    import kiln
    import onnx
    from onnx import numpy_helper

    d = model_dir(name)
    optimized = tmp_path / "optimized.onnx"
    kiln.optimize(str(d / "model.onnx"), str(optimized))
    inputs = sorted((d / "test_data_set_0").glob("input_*.pb"))
    theirs = ort_outputs(optimized, inputs, tmp_path)
    refs = []
    for p in sorted((d / "test_data_set_0").glob("output_*.pb")):
        t = onnx.TensorProto()
        t.ParseFromString(p.read_bytes())
        refs.append(numpy_helper.to_array(t))
    assert len(theirs) == len(refs)
    for a, b in zip(theirs, refs):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
