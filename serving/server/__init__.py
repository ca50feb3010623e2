"""For people who run the server: `bert-tf serve`, TensorFlow Serving's gRPC and REST APIs over exported versions.

It reads what the export wrote (the version directories, by `serving.protocol`'s names) and imports
nothing of the export or the clients; `python -m serving.server` runs it:
    model_server   `ModelServer` and the `serve` command (flags of `tensorflow_model_server`)
    model_config   `read_model_config_file`: `--model_config_file` (models, version policies, labels)
    model_manager  `ModelManager`: the versions served, loaded, retried and unloaded as TF Serving does
    model_options  `ModelOptions`: the settings of every model, from the flags down to each model
    servable       one loaded version (SavedModel or `model.tflite`), run with TF Serving's checks
    grpc_service   PredictionService and ModelService over gRPC
    rest_service   the REST API (`/v1/models/...`)
    http_framing   where a REST request begins and ends in a connection's bytes (RFC 9112)
    memory_budget  `MemoryBudget`: the memory REST bodies being parsed may take at once
    classify       Classify requests by `serving.classification`'s convention
    errors         `ServingError`: a failed request's gRPC status and HTTP status
"""
