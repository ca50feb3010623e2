"""Tokenize-and-pack throughput: bert_tf's tf.data pipeline vs the Rust `tokenizers.BertWordPieceTokenizer`.

Both take every SST-2 training sentence to `[CLS] ... [SEP]` ids padded to 128:
- A: `tf.data` from the sentences, `batch`, `map(BertPreprocessor)` (parallel), `prefetch`, iterated to the end;
- B: `BertWordPieceTokenizer.encode_batch` with truncation and padding to 128 (Rust, all cores).
After one warm-up run each, they run interleaved (A B A B ...). Tokens per second counts real
tokens (`[CLS]` and `[SEP]` included, padding not). Prints the results and appends them to
benchmarks/RESULTS.md.

Usage: python -m benchmarks.tokenizer [--repeats 7] [--batch-size 1024] [--no-write]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
import tokenizers  # noqa: E402

from bert_tf.preprocessor import BertPreprocessor  # noqa: E402
from bert_tf.tokenizer import BertTokenizer  # noqa: E402

DATA = Path(os.environ.get("BERT_TF_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
SEQ_LENGTH = 128


def sst2_train_sentences(data: Path) -> list[str]:
    lines = (data / "sst2" / "train.tsv").read_text(encoding="utf-8").split("\n")[1:]
    return [line.split("\t")[0] for line in lines if line]


def tf_data_pipeline(preprocessor: BertPreprocessor, sentences: list[str], batch_size: int) -> tf.data.Dataset:
    return (
        tf.data.Dataset.from_tensor_slices(sentences)
        .batch(batch_size)
        .map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )


def time_tf_data(dataset: tf.data.Dataset) -> float:
    start = time.perf_counter()
    for _ in dataset:
        pass
    return time.perf_counter() - start


def time_rust(reference, sentences: list[str]) -> float:
    start = time.perf_counter()
    reference.encode_batch(sentences)
    return time.perf_counter() - start


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs of each contender")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--no-write", action="store_true", help="do not append to benchmarks/RESULTS.md")
    args = parser.parse_args()

    vocab_file = DATA / "vocab" / "bert-base-uncased-vocab.txt"
    sentences = sst2_train_sentences(DATA)
    preprocessor = BertPreprocessor(BertTokenizer(vocab_file), seq_length=SEQ_LENGTH)
    reference = tokenizers.BertWordPieceTokenizer(str(vocab_file), lowercase=True)
    reference.enable_truncation(SEQ_LENGTH)
    reference.enable_padding(length=SEQ_LENGTH)

    dataset = tf_data_pipeline(preprocessor, sentences, args.batch_size)
    num_tokens = sum(int(tf.reduce_sum(batch["input_mask"])) for batch in dataset)
    expected_tokens = sum(sum(e.attention_mask) for e in reference.encode_batch(sentences))
    if num_tokens != expected_tokens:
        raise RuntimeError(f"Token counts differ: bert_tf {num_tokens}, reference {expected_tokens}.")

    time_tf_data(dataset), time_rust(reference, sentences)  # warm-up
    times = {"bert_tf tf.data": [], "tokenizers (Rust)": []}
    for _ in range(args.repeats):
        times["bert_tf tf.data"].append(time_tf_data(dataset))
        times["tokenizers (Rust)"].append(time_rust(reference, sentences))

    rates = {name: [num_tokens / t for t in ts] for name, ts in times.items()}
    medians = {name: statistics.median(r) for name, r in rates.items()}
    ratio = medians["bert_tf tf.data"] / medians["tokenizers (Rust)"]
    load = os.getloadavg()[0]
    machine = f"{cpu_model()}, {os.cpu_count()} logical cores, 1-minute load {load:.1f} after the runs (shared machine)"
    rows = [
        f"| {name} | {medians[name]:,.0f} | {min(r):,.0f} – {max(r):,.0f} | {statistics.median(times[name]):.3f} |"
        for name, r in rates.items()
    ]
    report = "\n".join(
        [
            f"## Tokenize and pack, SST-2 train ({datetime.date.today().isoformat()})",
            "",
            f"Command: `python -m benchmarks.tokenizer --repeats {args.repeats} --batch-size {args.batch_size}`  ",
            f"Machine: {machine}; TensorFlow {tf.__version__}, tokenizers {tokenizers.__version__}  ",
            f"Work: {len(sentences):,} sentences → {num_tokens:,} tokens, seq_length {SEQ_LENGTH}, "
            f"uncased vocabulary; {args.repeats} interleaved runs each after one warm-up.",
            "",
            "| contender | tokens/s (median) | tokens/s (min – max) | seconds (median) |",
            "|---|---|---|---|",
            *rows,
            "",
            f"Ratio bert_tf / Rust (medians): **{ratio:.2f}**",
            "",
        ]
    )
    print(report)
    if not args.no_write:
        existing = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmark results\n\n"
        RESULTS.write_text(existing.rstrip("\n") + "\n\n" + report, encoding="utf-8")
        print(f"Appended to {RESULTS}")


if __name__ == "__main__":
    main()
