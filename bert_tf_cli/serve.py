"""`bert-tf serve`: the TF-Serving-compatible development server (the flags of `tensorflow_model_server`)."""

from bert_tf_cli.argument_checks import check, existing_file, existing_path


def register(commands) -> None:
    from serving.server.model_server import add_arguments  # standard library only: cheap to import

    parser = commands.add_parser(
        "serve", help="serve a SavedModel over TF Serving's gRPC and REST APIs (development server)",
        description="Serve BASE/NAME/<version>/ SavedModels with TF Serving's gRPC PredictionService and "
                    "ModelService and its REST API: one model (--model_name, --model_base_path) or those of a "
                    "model config file (--model_config_file: several models, version policies, labels). Versions "
                    "are managed as TF Serving does: new ones picked up without restart, deleted ones unloaded, "
                    "failed loads retried. For development and tests: production should use the official "
                    "TensorFlow Serving, which takes the same flags and config file.")
    add_arguments(parser)
    parser.set_defaults(run=run)


def run(args) -> None:
    # The folders and files named, checked before TensorFlow loads (seconds); what they hold is the server's to check.
    for flag, value, is_valid in (("--model_config_file", args.model_config_file, existing_file),
                                  ("--model_base_path", not args.model_config_file and args.model_base_path, existing_path),
                                  ("--batching_parameters_file", args.batching_parameters_file, existing_file),
                                  ("--monitoring_config_file", args.monitoring_config_file, existing_file)):
        if value:
            check(flag, value, is_valid)
    from serving.server.model_server import run as serve

    serve(args)
