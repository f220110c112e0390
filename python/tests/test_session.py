"""kiln's Python module as a user of ONNX Runtime meets it (make python; run by make test from a
temporary folder in a venv, against the module installed there, never the source tree)."""
import os
import pathlib

import numpy as np
import pytest

import kiln

REPO = pathlib.Path(os.environ.get("KILN_REPO", pathlib.Path(__file__).resolve().parents[2]))
SHARED = pathlib.Path(os.environ.get("KILN_SHARED_MODELS", REPO.parent / "shared" / "models"))
onnx = pytest.importorskip("onnx") if os.environ.get("CI") != "true" else __import__("onnx")
from onnx import helper, numpy_helper  # noqa: E402


def model_dir(name):
    for base in (REPO / "models", SHARED):
        if (base / name / "model.onnx").exists():
            return base / name
    if os.environ.get("CI") == "true":
        raise AssertionError(f"model {name} missing (under CI every model must be there)")
    pytest.skip(f"no model {name}")


def load_set(d):
    def read(p):
        t = onnx.TensorProto()
        t.ParseFromString(p.read_bytes())
        return numpy_helper.to_array(t)
    s = d / "test_data_set_0"
    ins = [read(p) for p in sorted(s.glob("input_*.pb"))]
    outs = [read(p) for p in sorted(s.glob("output_*.pb"))]
    return ins, outs


def test_the_module_is_the_installed_one():
    assert not pathlib.Path(kiln.__file__).resolve().is_relative_to(REPO.resolve()), kiln.__file__


@pytest.mark.parametrize("name", ["squeezenet1_1", "resnet18", "bert_tiny_op13"])
def test_models_match_their_references(name):
    d = model_dir(name)
    sess = kiln.InferenceSession(str(d / "model.onnx"), providers=["CPUExecutionProvider"])
    ins, refs = load_set(d)
    feed = {i.name: x for i, x in zip(sess.get_inputs(), ins)}
    outs = sess.run(None, feed)
    assert len(outs) == len(refs)
    for got, want in zip(outs, refs):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_from_bytes_and_names_and_types():
    d = model_dir("squeezenet1_1")
    sess = kiln.InferenceSession((d / "model.onnx").read_bytes())
    (i,), (o,) = sess.get_inputs(), sess.get_outputs()
    assert (i.name, i.type, i.shape) == ("input", "tensor(float)", [1, 3, 224, 224])
    assert (o.name, o.type, o.shape) == ("output", "tensor(float)", [1, 1000])
    assert sess.get_providers() == ["CPUExecutionProvider"] == kiln.get_available_providers()


def symbolic_relu(path):
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["batch", 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_dynamic_batch(tmp_path):
    symbolic_relu(tmp_path / "m.onnx")
    sess = kiln.InferenceSession(str(tmp_path / "m.onnx"))
    assert sess.get_inputs()[0].shape == ["batch", 4]
    for batch in (1, 3, 8):
        x = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32)
        (y,) = sess.run(["y"], {"x": x})
        np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_wrong_name_shape_and_dtype_raise_kiln_errors(tmp_path):
    sess = kiln.InferenceSession(str(model_dir("squeezenet1_1") / "model.onnx"))
    x = np.zeros((1, 3, 224, 224), np.float32)
    with pytest.raises(kiln.Error, match="no input named 'foo'"):
        sess.run(None, {"foo": x})
    with pytest.raises(kiln.Error, match="input 'input'"):
        sess.run(None, {"input": np.zeros((1, 3, 5, 5), np.float32)})
    with pytest.raises(kiln.Error, match="no output named 'nope'"):
        sess.run(["nope"], {"input": x})
    with pytest.raises(kiln.Error, match=r"input 'input': expected tensor\(float\), got an array of"):
        sess.run(None, {"input": x.astype(np.float64)})
    # A nested list is converted; a non-contiguous array is read through a contiguous copy.
    (y,) = sess.run(None, {"input": x.tolist()})
    assert y.dtype == np.float32
    (z,) = sess.run(None, {"input": np.asfortranarray(x)})
    np.testing.assert_array_equal(y, z)
    with pytest.raises(kiln.Error, match="not available"):
        kiln.InferenceSession(str(model_dir("squeezenet1_1") / "model.onnx"), providers=["CUDAExecutionProvider"])
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(kiln.Error):
        kiln.InferenceSession(str(bad))


def test_threads_and_levels_give_the_same_answer():
    d = model_dir("squeezenet1_1")
    ins, refs = load_set(d)
    for threads in (1, 2):
        for level in (kiln.GraphOptimizationLevel.ORT_DISABLE_ALL, kiln.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                      kiln.GraphOptimizationLevel.ORT_ENABLE_ALL):
            so = kiln.SessionOptions()
            so.intra_op_num_threads = threads
            so.graph_optimization_level = level
            sess = kiln.InferenceSession(str(d / "model.onnx"), sess_options=so)
            (y,) = sess.run(None, {"input": ins[0]})
            np.testing.assert_allclose(y, refs[0], rtol=1e-3, atol=1e-4)


def test_an_onnxruntime_script_runs_unchanged(tmp_path):
    import kiln as ort  # the names a user of ONNX Runtime types
    d = model_dir("squeezenet1_1")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(d / "model.onnx"), so, providers=["CPUExecutionProvider"])
    ins, refs = load_set(d)
    input_name = sess.get_inputs()[0].name
    outputs = sess.run(None, {input_name: ins[0]})
    np.testing.assert_allclose(outputs[0], refs[0], rtol=1e-3, atol=1e-4)


def test_compile_writes_a_kiln_file_the_session_loads(tmp_path):
    d = model_dir("squeezenet1_1")
    kiln.compile(str(d / "model.onnx"), str(tmp_path / "m.kiln"))
    sess = kiln.InferenceSession(str(tmp_path / "m.kiln"))
    ins, refs = load_set(d)
    (y,) = sess.run(None, {"input": ins[0]})
    np.testing.assert_allclose(y, refs[0], rtol=1e-3, atol=1e-4)


def test_optimize_returns_standard_onnx_that_runs_the_same(tmp_path):
    d = model_dir("squeezenet1_1")
    data = kiln.optimize(str(d / "model.onnx"), str(tmp_path / "opt.onnx"))
    assert isinstance(data, bytes) and (tmp_path / "opt.onnx").read_bytes() == data
    m = onnx.load_from_string(data)
    assert {o.domain for o in m.opset_import} <= {"", "ai.onnx"}
    assert all(n.domain in ("", "ai.onnx") for n in m.graph.node)
    original = onnx.load(str(d / "model.onnx"))
    assert len(m.graph.node) < len(original.graph.node)
    ins, refs = load_set(d)
    (y,) = kiln.InferenceSession(data).run(None, {"input": ins[0]})
    np.testing.assert_allclose(y, refs[0], rtol=1e-3, atol=1e-4)
    # From bytes too, and kiln-domain levels only when asked for.
    assert kiln.optimize((d / "model.onnx").read_bytes()) == data
    with pytest.raises(kiln.Error, match="kiln_ops"):
        kiln.optimize(str(d / "model.onnx"), level=3)
    fused = onnx.load_from_string(kiln.optimize(str(d / "model.onnx"), level=3, kiln_ops=True))
    assert any(n.domain == "kiln" for n in fused.graph.node)
    with pytest.raises(kiln.Error, match="0..3"):
        kiln.optimize(str(d / "model.onnx"), level=7, kiln_ops=True)


def test_enable_profiling_writes_a_chrome_trace(tmp_path):
    import json
    so = kiln.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    sess = kiln.InferenceSession(str(model_dir("squeezenet1_1") / "model.onnx"), so)
    sess.run(None, {"input": np.zeros((1, 3, 224, 224), np.float32)})
    path = sess.end_profiling()
    assert path.startswith(str(tmp_path / "prof_")) and path.endswith(".json")
    events = json.loads(pathlib.Path(path).read_text())["traceEvents"]
    assert events and all(e["ph"] == "X" and "op" in e["args"] for e in events)
