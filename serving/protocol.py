"""Names that the export, the server and the clients share: signatures, version files, the server's batch limit.

Standard library only, and nothing imported: the command line reads `DEFAULT_MAX_BATCH_SIZE` for
`bert-tf serve --help` without loading TensorFlow.
"""

DEFAULT_SIGNATURE = "serving_default"  # what a request without a signature name runs
SAVED_MODEL_FILE = "saved_model.pb"  # a version directory holds one or both (TensorFlow Serving's names)
TFLITE_MODEL_FILE = "model.tflite"
DEFAULT_MAX_BATCH_SIZE = 512  # the server's `--max_batch_size` default; clients send batches of at most this
