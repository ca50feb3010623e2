"""For people who write exports: a bert-tf model directory → what TF Serving or a TFLite interpreter runs.

One module per artefact, each reading top to bottom from the model directory to the file written;
nothing here is imported by the server or the clients (they share only `serving.protocol`'s names):
    saved_model  `export_saved_model`: BASE/NAME/<version>/ SavedModel (`bert-tf export`), its raw-text signatures
    tflite       `export_tflite`: a `.tflite` file (ids or raw text in, quantization), packed with dense ops only
    signatures   what both compute per task from token ids (`ServingSpec`, `serve_ids`, `model_info`)
    demo_model   `save_demo_model`: a tiny text classifier SavedModel to try the server on
"""
