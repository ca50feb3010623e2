"""`bert-tf serve`: the TF-Serving-compatible development server (the flags of `tensorflow_model_server`)."""


def register(commands) -> None:
    from serving.server import add_arguments  # standard library only: cheap to import

    parser = commands.add_parser(
        "serve", help="serve a SavedModel over TF Serving's gRPC and REST APIs (development server)",
        description="Serve BASE/NAME/<version>/ SavedModels with TF Serving's gRPC PredictionService and "
                    "ModelService and its REST API, picking up new versions without restart. For development "
                    "and tests: production should use the official TensorFlow Serving.")
    add_arguments(parser)
    parser.set_defaults(run=run)


def run(args) -> None:
    from serving.server import run as serve

    serve(args)
