"""For people who call a server (this one or the official TensorFlow Serving): Python clients, no server code.

Nothing here imports the server or the export (only `serving.protocol`, `serving.rest_json` and
`serving.classification`, what both sides speak):
    grpc_client        `GrpcClient`: Predict, Classify, metadata and status over gRPC
    rest_client        `RestClient`: predict, classify, metadata and status over REST
    batching           large requests sent in chunks of `max_batch_size`, the answers joined
    server_prediction  `ServerPredictor`: `bert-tf predict --server`'s results from a served export
"""
