"""Names that the export, the server and the clients share: signatures, version files, the server's batch limit,
and how a request's wrong input names are told.

Standard library only, and nothing imported: the command line reads `DEFAULT_MAX_BATCH_SIZE` for
`bert-tf serve --help` without loading TensorFlow.
"""

DEFAULT_SIGNATURE = "serving_default"  # what a request without a signature name runs
SAVED_MODEL_FILE = "saved_model.pb"  # a version directory holds one or both (TensorFlow Serving's names)
TFLITE_MODEL_FILE = "model.tflite"
DEFAULT_MAX_BATCH_SIZE = 512  # the server's `--max_batch_size` default; clients send batches of at most this


def input_names_message(sent, expected) -> str:
    """What is wrong with the input names of a request, for people: "unknown input 'txt', missing input 'text'"."""
    def listed(kind: str, names) -> str:
        names = sorted(names)
        return f"{kind} input{'s' if len(names) > 1 else ''} {', '.join(repr(name) for name in names)}"

    unknown, missing = set(sent) - set(expected), set(expected) - set(sent)
    return ", ".join([listed("unknown", unknown)] * bool(unknown) + [listed("missing", missing)] * bool(missing))
