"""Sentence-embedding speed: raw text → normalised vector with a BERT-base-sized encoder, bert-tf against
sentence-transformers and ONNX Runtime; the same model served under 64 clients; exact search over stored vectors.

    python -m benchmarks.run --only embedding_speed            # about 30 minutes on 2 cores
    python -m benchmarks.run --only embedding_speed --quick    # smoke mode: a tiny encoder, few rounds

One seeded random BERT-base `BertEmbedder` (mean pooling, vectors of length 1; speed does not depend on the
weights) is saved as a bert-tf model directory and run every way, every one holding exactly its weights:
- bert-tf: `bert-tf export`'s SavedModel `serving_default` (raw text in: the tokenizer, the encoder and the
  pooling in one graph), float32 and `--quantize bf16`; the int8 `model.tflite` (`--quantize int8`, LiteRT,
  raw text in);
- sentence-transformers 6.2 (PyTorch): the same weights as a Hugging Face folder (`bert_tf.write_hf_directory`),
  its `Transformer` + mean `Pooling` + `Normalize` modules, `encode(texts)`: float32, bfloat16 (the modules cast),
  and int8 (`torch.ao.quantization.quantize_dynamic` of its Linear layers, the int8 route its docs give for CPUs
  besides ONNX/OpenVINO backends, which need `optimum`, not installed here);
- ONNX Runtime: transformers' `BertModel` of the same folder exported to ONNX, fused by ONNX Runtime's BERT
  optimizer (float32) and with int8 weights (`quantize_dynamic`), fed by the Rust tokenizer
  (`tokenizers.BertWordPieceTokenizer`, padding to the batch's longest), mean pooling and normalising in numpy.
Inputs: STS-B dev sentences at their own lengths, one text per call and in batches of 32 (tokenizer counted on
every side), interleaved rounds (`benchmarks.harness`). Every contender's vectors are compared with bert-tf's
float32 ones (largest difference; for bf16 and int8 the smallest cosine). Served: `benchmarks.serving_load` with
`bert-tf serve`'s request batching, 64 single-text gRPC clients, against the in-process batch-32 call (target
≥ 0.8×). Search: `serving.export.search_index.write_search_index` with 10k, 100k and 1M random unit vectors of
768 values (BM25 over the ids as texts), dense queries (raw text → top 10) one at a time and 32 at a time, and
the inner products and top-k alone.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import bert_tf
from benchmarks.contenders import export_onnx
from benchmarks.harness import Contender, interleaved, rate_cell, usable_cores
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings

NAME = "embedding_speed"
STS_DEV = ("stsb", "sts-dev.csv")
SEQ_LENGTH = 128
BATCH = 32
SINGLE_TEXTS = 64  # texts sent one per call, each round
BATCHED_TEXTS = 256  # texts sent 32 per call, each round
SEARCH_SIZES = (10_000, 100_000, 1_000_000)
TOP_K = 10
BERT_TF_F32, BERT_TF_BF16, BERT_TF_INT8 = ("bert-tf SavedModel float32 (raw text)", "bert-tf SavedModel bf16 (raw text)",
                                           "bert-tf int8 model.tflite (raw text)")
ST_F32, ST_BF16, ST_INT8 = ("sentence-transformers float32", "sentence-transformers bfloat16",
                            "sentence-transformers int8 (torch dynamic)")
ORT_F32, ORT_INT8 = "ONNX Runtime float32 fused + Rust tokenizer", "ONNX Runtime int8 dynamic + Rust tokenizer"
PRECISION = {BERT_TF_F32: "float32", ST_F32: "float32", ORT_F32: "float32", BERT_TF_BF16: "bf16", ST_BF16: "bf16",
             BERT_TF_INT8: "int8", ST_INT8: "int8", ORT_INT8: "int8"}
OURS = (BERT_TF_F32, BERT_TF_BF16, BERT_TF_INT8)


def sentences(settings: Settings) -> list[str]:
    """STS-B dev's distinct sentences, in file order."""
    from bert_tf.tasks.embedding.data import read_embedding_file

    texts = [text for pair in read_embedding_file(settings.data_file(*STS_DEV)).texts for text in pair]
    return list(dict.fromkeys(texts))[:BATCHED_TEXTS]


def embedding_model_dir(settings: Settings, directory: Path) -> Path:
    """A seeded random BERT-base (quick: tiny) `BertEmbedder` saved as a bert-tf model directory."""
    keras.utils.set_random_seed(0)
    model = bert_tf.BertEmbedder(bert_tf.BertModel(settings.config("base")))
    return bert_tf.save_pretrained(model, directory, vocab_file=settings.vocab_file, lower_case=True, task="embed",
                                   seq_length=SEQ_LENGTH)


def bert_tf_contenders(model_dir: Path, scratch: Path, threads: int) -> dict:
    """{name: texts → vectors} of the exports `bert-tf export` writes, and the float32 version's folder."""
    from serving.export.saved_model import export_saved_model
    from serving.tflite_runner import TfliteModel

    versions = {quantize: export_saved_model(model_dir, scratch / "serving", f"embed_{quantize}", quantize=quantize)
                for quantize in ("none", "bf16", "int8")}
    calls = {}
    for name, quantize in ((BERT_TF_F32, "none"), (BERT_TF_BF16, "bf16")):
        signature = tf.saved_model.load(str(versions[quantize])).signatures["serving_default"]
        calls[name] = lambda texts, s=signature: s(text=tf.constant(texts))["embedding"].numpy()
    tflite = TfliteModel(versions["int8"] / "model.tflite", num_threads=threads)
    calls[BERT_TF_INT8] = lambda texts: tflite.run({"text": np.array(texts, dtype=object)})["embedding"]
    return calls, versions["none"]


def hf_folder(model_dir: Path, scratch: Path) -> Path:
    encoder = bert_tf.load_model_directory(model_dir).encoder
    return bert_tf.write_hf_directory(encoder, scratch / "hf", vocab_file=model_dir / "vocab.txt", lower_case=True)


def sentence_transformers_contenders(folder: Path, threads: int) -> dict:
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    transformers.logging.set_verbosity_error()
    torch.set_num_threads(threads)

    def model(dtype):
        encoder = Transformer(str(folder), max_seq_length=SEQ_LENGTH)
        built = SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension(), "mean"), Normalize()],
                                    device="cpu").eval()
        return built.to(dtype)

    int8 = torch.ao.quantization.quantize_dynamic(model(torch.float32), {torch.nn.Linear}, dtype=torch.qint8)
    models = {ST_F32: model(torch.float32), ST_BF16: model(torch.bfloat16), ST_INT8: int8}
    return {name: (lambda texts, m=built: m.encode(texts, batch_size=BATCH, convert_to_tensor=True).float().numpy())
            for name, built in models.items()}


def onnx_runtime_contenders(folder: Path, vocab_file: Path, scratch: Path, threads: int) -> dict:
    """ONNX Runtime's fused float32 and int8 graphs of transformers' BertModel, behind the Rust tokenizer."""
    import onnx
    import onnxruntime
    import tokenizers
    import transformers
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    model = transformers.BertModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    plain = export_onnx(model, scratch / "encoder.onnx", output="last_hidden_state")
    config = model.config
    fused, int8 = scratch / "encoder_fused.onnx", scratch / "encoder_int8.onnx"
    optimize_model(str(plain), model_type="bert", num_heads=config.num_attention_heads,
                   hidden_size=config.hidden_size).save_model_to_file(str(fused))
    quantize_dynamic(str(fused), str(int8), weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    rust = tokenizers.BertWordPieceTokenizer(str(vocab_file), lowercase=True)
    rust.enable_truncation(SEQ_LENGTH)
    rust.enable_padding()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads

    def embed(session, texts):
        encodings = rust.encode_batch(list(texts))
        ids = np.array([encoding.ids for encoding in encodings], np.int64)
        mask = np.array([encoding.attention_mask for encoding in encodings], np.int64)
        tokens = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        pooled = (tokens * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)

    sessions = {name: onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                for name, path in ((ORT_F32, fused), (ORT_INT8, int8))}
    return {name: (lambda texts, s=session: embed(s, texts)) for name, session in sessions.items()}


def agreement(calls: dict, texts: list[str]) -> dict:
    """Per contender: the largest difference from bert-tf float32's vectors, and the smallest cosine with them."""
    reference = calls[BERT_TF_F32](texts)
    out = {}
    for name, call in calls.items():
        vectors = np.concatenate([call(texts[start:start + BATCH]) for start in range(0, len(texts), BATCH)])
        cosines = np.sum(vectors * reference, axis=-1) / np.linalg.norm(vectors, axis=-1)
        out[name] = {"max_difference": float(np.abs(vectors - reference).max()), "min_cosine": float(cosines.min())}
    return out


def race(calls: dict, texts: list[str], settings: Settings) -> dict:
    """Sentences/s of every contender, one text per call and 32 per call, interleaved."""
    single, batched = texts[:SINGLE_TEXTS], [texts[start:start + BATCH] for start in range(0, len(texts), BATCH)]
    out = {}
    for label, inputs, count in (("one text per call", [[text] for text in single], len(single)),
                                 (f"batches of {BATCH}", batched, len(texts))):
        contenders = [Contender(name, lambda call=call: [call(chunk) for chunk in inputs], items=count)
                      for name, call in calls.items()]
        out[label] = interleaved(contenders, settings.rounds, warmup=1, max_seconds=settings.max_seconds,
                                 description=label)
    return out


def served(version: Path, texts_file: Path, scratch: Path, settings: Settings) -> str:
    """`benchmarks.serving_load`'s section for the float32 export under 1 and 64 gRPC clients with batching."""
    results = scratch / "serving_load" / "RESULTS.md"
    results.parent.mkdir()
    command = [sys.executable, "-m", "benchmarks.serving_load", "--model_base_path", str(version.parent),
               "--model_name", version.parent.name, "--sentences", str(texts_file), "--clients", "1", "64",
               "--modes", "grpc-kept", "--enable_batching", "--batching_parameters_file",
               "serving/batching_parameters.txt",  # the checkout's: benchmarks run from it
               "--requests", "400" if settings.quick else "4000", "--rounds", "2" if settings.quick else "4",
               "--max_seconds", "60" if settings.quick else "240", "--results", str(results)]
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        return f"`benchmarks.serving_load` failed ({completed.returncode}):\n\n```\n{completed.stderr[-2000:]}\n```"
    section = results.read_text(encoding="utf-8")
    body = section[section.index("\n", section.index("## ")) + 1:section.rindex("<!--")].strip()
    return re.sub(r"(?m)^#", "###", body)


def search(model_dir: Path, texts: list[str], scratch: Path, settings: Settings) -> list[list[str]]:
    """Queries/s and latency of the search SavedModel over 10k, 100k and 1M random unit vectors, and of its inner
    products and top-k alone."""
    from bert_tf.retrieval.bm25 import BM25Index
    from serving.export.search_index import SearchSettings, write_search_index
    from serving.export.signatures import serving_spec

    directory = bert_tf.load_model_directory(model_dir)
    size = directory.encoder.config.hidden_size
    rows = []
    for documents in SEARCH_SIZES[:1] if settings.quick else SEARCH_SIZES:
        vectors = np.random.default_rng(0).standard_normal([documents, size], dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=-1, keepdims=True)
        ids = [str(i) for i in range(documents)]
        version = write_search_index(serving_spec(directory), ids, ids, vectors, BM25Index(ids),
                                     scratch / "search" / str(documents) / "1", SearchSettings(top_k=TOP_K))
        del vectors
        loaded = tf.saved_model.load(str(version))
        query = loaded.signatures["dense"]
        stored = loaded.vectors

        @tf.function
        def top_k(embedding):
            return tf.math.top_k(tf.matmul(embedding, stored, transpose_b=True), k=TOP_K)

        singles = 16  # calls of one text or one vector per timed run
        one, batch = texts[:singles], texts[:BATCH]
        unit = tf.math.l2_normalize(tf.random.stateless_normal([BATCH, size], seed=[0, 1]), axis=-1)
        # (contender, calls it makes per run): a latency is a call's time
        timed = [(Contender("query, one text per call", lambda: [query(text=tf.constant([text])) for text in one],
                            items=singles), singles),
                 (Contender(f"queries, {BATCH} per call", lambda: query(text=tf.constant(batch)), items=BATCH), 1),
                 (Contender("inner products + top-k alone, one vector",
                            lambda: [top_k(unit[i:i + 1]) for i in range(singles)], items=singles), singles),
                 (Contender(f"inner products + top-k alone, {BATCH} vectors", lambda: top_k(unit), items=BATCH), 1)]
        timings = interleaved([contender for contender, _ in timed], settings.rounds, warmup=1,
                              max_seconds=settings.max_seconds, description=f"search {documents:,}")
        memory = documents * size * 4 / 2**20
        for contender, calls in timed:
            timing = timings[contender.name]
            rows.append([f"{documents:,}", f"{memory:,.0f} MiB", contender.name, rate_cell(timing),
                         f"{timing.median_seconds / calls * 1e3:,.2f} ms"])
    return rows


def run(settings: Settings) -> BenchmarkResult:
    title = "## Sentence-embedding speed: bert-tf against sentence-transformers and ONNX Runtime; served; search"
    if settings.data_file(*STS_DEV) is None:
        message = f"no {settings.data_dir.joinpath(*STS_DEV)} (the team data folder; set BERT_TF_DATA)"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    texts = sentences(settings)
    with tempfile.TemporaryDirectory(prefix="embedding-speed-") as scratch_name:
        scratch = Path(scratch_name)
        model_dir = embedding_model_dir(settings, scratch / "model")
        agreed, timings, float32_version = contenders_race(model_dir, texts, scratch, settings)
        texts_file = scratch / "sentences.txt"
        texts_file.write_text("\n".join(texts) + "\n", encoding="utf-8")
        serving = served(float32_version, texts_file, scratch, settings)
        search_rows = search(model_dir, texts, scratch, settings)
    return report(title, texts, agreed, timings, serving, search_rows, settings)


def contenders_race(model_dir: Path, texts: list[str], scratch: Path, settings: Settings):
    """Every contender built, checked against bert-tf float32 and raced; (agreement, timings, the float32 export).
    The models are let go on return, before the search's vectors take the memory."""
    threads = usable_cores()
    calls, float32_version = bert_tf_contenders(model_dir, scratch, threads)
    folder = hf_folder(model_dir, scratch)
    calls.update(sentence_transformers_contenders(folder, threads))
    calls.update(onnx_runtime_contenders(folder, model_dir / "vocab.txt", scratch, threads))
    return agreement(calls, texts), race(calls, texts, settings), float32_version


def report(title, texts, agreed, timings, serving, search_rows, settings: Settings) -> BenchmarkResult:
    verdicts, rows = [], []
    for label, by_name in timings.items():
        for precision in ("float32", "bf16", "int8"):
            ours = next(name for name in OURS if PRECISION[name] == precision)
            peers = [name for name in by_name if PRECISION[name] == precision and name not in OURS]
            fastest = max(peers, key=lambda name: by_name[name].median)
            ratio = by_name[ours].median / by_name[fastest].median
            verdicts.append([label, precision, f"{ratio:.2f}× {fastest}", "**met**" if ratio >= 1 else "not met"])
        best = max(timing.median for timing in by_name.values())
        for name, timing in sorted(by_name.items(), key=lambda item: -item[1].median):
            rows.append([label, name, rate_cell(timing), f"{timing.median / best:.2f}",
                         f"{agreed[name]['max_difference']:.1e}", f"{agreed[name]['min_cosine']:.5f}"])
    tokens = np.mean([len(text.split()) for text in texts])
    quick = "\n\n**Quick mode: a tiny encoder, few rounds: the code runs, the figures mean nothing.**" \
        if settings.quick else ""
    data = {"agreement": agreed, "timings": {label: {name: timing.summary() for name, timing in by_name.items()}
                                             for label, by_name in timings.items()}, "search": search_rows}
    markdown = f"""{title}{quick}

A seeded random {'tiny' if settings.quick else 'BERT-base'} `BertEmbedder` (mean pooling, normalised), the same
weights in every contender; {len(texts)} STS-B dev sentences ({tokens:.1f} words on average) at their own lengths, raw
text in on every side (the tokenizer's time counted), {usable_cores()} threads each. Rates in sentences/s, median
[quartiles] of interleaved rounds; "vs fastest": against the fastest row of the same input; the last two columns
compare each contender's vectors with bert-tf float32's on all {len(texts)} sentences.

{markdown_table(["input", "contender", "sentences/s", "vs fastest", "largest difference", "smallest cosine"], rows)}

Targets (each bert-tf precision ≥ the fastest peer of that precision):

{markdown_table(["input", "precision", "bert-tf against the fastest peer", "target"], verdicts)}

### Served: `bert-tf serve` with request batching, the float32 export, 64 single-text gRPC clients

{serving}

### Search: `bert-tf index`'s SavedModel over random unit vectors of the encoder's width

Exact inner products over every stored vector and `tf.math.top_k` (k = {TOP_K}) in the graph; a query's text is
embedded by the same BERT-base first ("query" rows), or the inner products and top-k run alone on ready vectors.
Latency: the median time of one call (one text per call: per text).

{markdown_table(["stored vectors", "their memory", "what is timed", "queries/s", "latency"], search_rows)}"""
    return BenchmarkResult(NAME, markdown, data)
