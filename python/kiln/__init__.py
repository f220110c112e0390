"""kiln: a deep-learning compiler and inference engine, with ONNX Runtime's Python API.

    import kiln as ort
    sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    (y,) = sess.run(None, {name: x})
"""
from ._kiln import (  # noqa: F401
    Error,
    GraphOptimizationLevel,
    InferenceSession,
    NodeArg,
    SessionOptions,
    compile,
    get_available_providers,
    get_device,
    optimize,
)

__version__ = "0.1.0"
