"""Reads every export of a manifest (`compat.exports`) with the TensorFlow it runs under; writes what each answered.

Run as a script by the Python of each TensorFlow checked, it imports only numpy and TensorFlow,
and tensorflow-text's ops unless `--without-text-ops` (as in a TF Serving build without them).
Each SavedModel is read two ways, and every signature called on the inputs it names (the kind's own,
`KIND/name`, in place of the shared ones: `inputs_of`):
- `session`: TF Serving's way: the MetaGraph imported into a TF1 session
  (`tf.compat.v1.saved_model.load`), each SignatureDef run by its tensor names;
- `function`: Python's way: `tf.saved_model.load` and its `signatures`.
A `model.tflite` is read by TensorFlow's TFLite interpreter, with tensorflow-text's TFLite
kernels (`InterpreterWithCustomOps`, as serving/tflite_runner.py registers them) or without (the
builtin ops only, as TF Serving's `--prefer_tflite_model` reads it).

It writes `OUT.npz`, one array per `kind/reader/signature/output`, and `OUT.json`: the TensorFlow and
tensorflow-text versions and, per kind, whether it loaded (else what the error says) and the ops
it holds that this TensorFlow does not register (SavedModel) or that are custom (TFLite).

    $ python compat/reader.py manifest.json answers/2.18 [--without-text-ops]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

SERVE_TAG = "serve"
INIT_OP_SIGNATURE = "__saved_model_init_op"  # TF2's init op, kept among the SignatureDefs; TF Serving runs it at load


def read_session(path: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every SignatureDef's outputs, run in a TF1 session as TF Serving runs them: {signature/output: array}."""
    answers = {}
    with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as session:
        meta_graph = tf.compat.v1.saved_model.load(session, [SERVE_TAG], path)
        for name, signature in meta_graph.signature_def.items():
            if name == INIT_OP_SIGNATURE:
                continue
            feed = {tensor.name: inputs[key] for key, tensor in signature.inputs.items()}
            fetches = {key: tensor.name for key, tensor in signature.outputs.items()}
            answers.update({f"{name}/{key}": value for key, value in session.run(fetches, feed).items()})
    return answers


def read_functions(path: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every signature's outputs, called from `tf.saved_model.load`: {signature/output: array}."""
    answers = {}
    for name, function in tf.saved_model.load(path).signatures.items():
        outputs = function(**{key: tf.constant(inputs[key]) for key in function.structured_input_signature[1]})
        answers.update({f"{name}/{key}": value.numpy() for key, value in outputs.items()})
    return answers


def read_tflite(path: str, inputs: dict[str, np.ndarray], text_ops: bool) -> dict[str, np.ndarray]:
    """Every signature's outputs from TensorFlow's TFLite interpreter: {signature/output: array}."""
    if text_ops:
        import tensorflow_text
        from tensorflow.lite.python.interpreter import InterpreterWithCustomOps

        interpreter = InterpreterWithCustomOps(
            custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS, model_path=path)
    else:
        interpreter = tf.lite.Interpreter(model_path=path)
    interpreter.allocate_tensors()
    answers = {}
    for name in interpreter.get_signature_list():
        runner = interpreter.get_signature_runner(name)
        outputs = runner(**{key: inputs[key].astype(object) if inputs[key].dtype.kind == "S" else inputs[key]
                            for key in runner.get_input_details()})
        answers.update({f"{name}/{key}": value for key, value in outputs.items()})
    return answers


def saved_model_foreign_ops(path: str) -> list[str]:
    """The ops of a SavedModel's graph and functions that this process's TensorFlow does not register."""
    from tensorflow.core.protobuf import saved_model_pb2
    from tensorflow.python.framework import op_def_registry

    saved_model = saved_model_pb2.SavedModel.FromString((Path(path) / "saved_model.pb").read_bytes())
    names = set()
    for meta_graph in saved_model.meta_graphs:
        names.update(node.op for node in meta_graph.graph_def.node)
        for function in meta_graph.graph_def.library.function:
            names.update(node.op for node in function.node_def)
    return sorted(name for name in names if op_def_registry.get(name) is None)


def tflite_custom_ops(path: str) -> list[str]:
    """The custom (non-builtin) ops of a `.tflite` file."""
    from tensorflow.lite.tools import flatbuffer_utils

    codes = flatbuffer_utils.read_model(path).operatorCodes
    return sorted({code.customCode.decode() for code in codes if code.customCode})


class Unreadable(Exception):
    """An export that a reader could not load or run: "reader: ErrorType: what the error says"."""


def read_export(export: dict, inputs: dict[str, np.ndarray], text_ops: bool) -> dict[str, np.ndarray]:
    """The answers of one export of the manifest, every way it is read: {reader/signature/output: array}."""
    if export["format"] == "tflite":
        readers = {"tflite": lambda path, values: read_tflite(path, values, text_ops)}
    else:
        readers = {"session": read_session, "function": read_functions}
    answers = {}
    for reader, read in readers.items():
        try:
            answers.update({f"{reader}/{key}": value for key, value in read(export["path"], inputs).items()})
        except Exception as error:  # whatever stops a reader is the finding
            raise Unreadable(f"{reader}: {type(error).__name__}: {reason(error)}") from error
    return answers


def inputs_of(kind: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The inputs `kind` is read on: the shared ones, with its own (`kind/name`) in their place.

    >>> inputs_of("lexical", {"mode": np.array(b"hybrid"), "lexical/mode": np.array(b"lexical")})["mode"]
    array(b'lexical', dtype='|S7')
    """
    prefix = f"{kind}/"
    own = {key.removeprefix(prefix): value for key, value in inputs.items() if key.startswith(prefix)}
    return {**{key: value for key, value in inputs.items() if "/" not in key}, **own}


def reason(error: Exception) -> str:
    """The first sentence of an error's message that says something: not a heading ("Graph execution error:").

    >>> reason(ValueError("Graph execution error:\\n\\nOp type not registered 'X' in binary. Make sure ..."))
    "Op type not registered 'X' in binary"
    """
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    telling = [line for line in lines if not line.endswith(":") and not line.startswith("Node:")]
    return (telling or lines or [""])[0].split(". ")[0][:300]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest", help="manifest.json written by compat.exports")
    parser.add_argument("out", help="writes OUT.npz and OUT.json")
    parser.add_argument("--without-text-ops", action="store_true", help="do not import tensorflow_text")
    args = parser.parse_args(argv)
    text_ops = not args.without_text_ops
    if text_ops:
        import tensorflow_text  # registers its ops before any graph is loaded
    manifest = json.loads(Path(args.manifest).read_text())
    with np.load(manifest["inputs"]) as arrays:
        inputs = dict(arrays)
    report = {"tensorflow": tf.__version__, "text_ops": text_ops,
              "tensorflow_text": tensorflow_text.__version__ if text_ops else None, "exports": {}}
    answers = {}
    for kind, export in manifest["exports"].items():
        foreign = tflite_custom_ops if export["format"] == "tflite" else saved_model_foreign_ops
        reading = {"foreign_ops": foreign(export["path"])}
        try:
            answers.update({f"{kind}/{key}": value
                            for key, value in read_export(export, inputs_of(kind, inputs), text_ops).items()})
            reading["loads"] = True
        except Unreadable as error:
            reading.update(loads=False, error=str(error))
        report["exports"][kind] = reading
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    np.savez(f"{args.out}.npz", **{key: value.astype(bytes) if value.dtype == object else value
                                   for key, value in answers.items()})
    Path(f"{args.out}.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
