"""Learning a WordPiece vocabulary from books: `bert-tf vocab` against KerasHub's and tensorflow-text's learners.

    python -m benchmarks.run --only vocab          # about 10 minutes on 2 cores

The same text (two of the shared books, `BOOKS`) and the same request (`SIZE` tokens, uncased, accents
stripped, pieces seen at least 10 times, 5% slack) to:
- bert-tf: `bert_tf.learn_vocabulary` (what `bert-tf vocab` calls): words counted in batches of lines by
  the tokenizer's own splitting in a `tf.function`, then tensorflow-text's learner, its binary search over
  the count a piece needs run one try at a time;
- KerasHub: `keras_hub.tokenizers.compute_word_piece_vocabulary` on a `tf.data.TextLineDataset` of the
  files, batched by 1,000 lines;
- tensorflow-text: `bert_vocab_from_dataset` on the same dataset (KerasHub calls its learner too).
Each is timed whole (reading, counting, learning) in interleaved rounds; bert-tf's two phases are
timed once more apart. The vocabularies are compared: size, and the share of bert-tf's learned
tokens that the others learned too (the same job done).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks.harness import Contender, interleaved, rate_cell
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings

NAME = "vocab_learning"
BOOKS = ("2701-0.txt", "514.txt")  # Moby Dick, Little Women: 2.4 MB
SIZE = 8000
QUICK_SIZE, QUICK_LINES = 500, 2000
RESERVED = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def run(settings: Settings) -> BenchmarkResult:
    title = "## Learning a WordPiece vocabulary: bert-tf against KerasHub and tensorflow-text"
    paths = [settings.data_file("corpus", book) for book in BOOKS]
    if None in paths:
        message = f"the books {BOOKS} are not in {settings.data_dir / 'corpus'}"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    import tensorflow as tf
    from keras_hub.tokenizers import compute_word_piece_vocabulary
    from tensorflow_text.tools.wordpiece_vocab.bert_vocab_from_dataset import bert_vocab_from_dataset

    import bert_tf
    from bert_tf import vocabulary as bert_tf_vocabulary

    size = QUICK_SIZE if settings.quick else SIZE
    with tempfile.TemporaryDirectory(prefix="vocab-") as scratch:
        scratch = Path(scratch)
        if settings.quick:
            paths = [_head(path, scratch / path.name, QUICK_LINES) for path in paths]
        megabytes = sum(path.stat().st_size for path in paths) / 1e6
        learned = {}

        def dataset():
            return tf.data.TextLineDataset([str(path) for path in paths]).batch(1000)

        def ours():
            vocabulary = bert_tf.learn_vocabulary(paths, size, scratch / "vocab.txt", lower_case=True, progress=False)
            learned["bert-tf"] = list(vocabulary.tokens)

        def keras_hub():
            learned["KerasHub"] = compute_word_piece_vocabulary(dataset(), size, lowercase=True, strip_accents=True,
                                                                reserved_tokens=RESERVED)

        def tensorflow_text():
            learned["tensorflow-text"] = bert_vocab_from_dataset(dataset(), size, RESERVED,
                                                                 bert_tokenizer_params={"lower_case": True})

        contenders = [Contender("bert-tf", ours, megabytes), Contender("KerasHub", keras_hub, megabytes),
                      Contender("tensorflow-text", tensorflow_text, megabytes)]
        timings = interleaved(contenders, rounds=settings.rounds if settings.quick else 3, warmup=0, min_rounds=2,
                              max_seconds=settings.max_seconds * 4, description="vocabulary learning")
        phases = _our_phases(bert_tf_vocabulary, paths, size)

    base = timings["bert-tf"].median_seconds
    ours_learned = _learned_pieces(learned["bert-tf"])
    rows = []
    for name, timing in timings.items():
        pieces = _learned_pieces(learned[name])
        rows.append([name, f"{timing.median_seconds:.1f}", rate_cell(timing, 2), f"{base / timing.median_seconds:.2f}",
                     f"{len(learned[name]):,}", f"{100 * len(ours_learned & pieces) / max(len(ours_learned), 1):.1f}"])
    table = markdown_table(["learner", "seconds (median)", "MB/s (q1–q3)", "speed ÷ bert-tf's", "tokens",
                            "% of bert-tf's learned tokens also learned"], rows)
    fastest = max(timings.values(), key=lambda timing: timing.median)
    verdict = ("bert-tf is the fastest" if fastest.name == "bert-tf" else
               f"{fastest.name} is {timings['bert-tf'].median_seconds / fastest.median_seconds:.2f}× as fast as bert-tf")
    quick = "\n\n**Quick mode: a few thousand lines; the figures mean nothing.**" if settings.quick else ""
    markdown = f"""{title}
{quick}
{len(paths)} shared books ({', '.join(BOOKS)}, {megabytes:.1f} MB), {size:,} tokens asked for, uncased, each learner
timed whole in {timings['bert-tf'].rounds} interleaved rounds (module docstring: `benchmarks/vocab_learning.py`).

{table}

bert-tf's phases (one more run): counting words {phases['count']:.1f} s, learning {phases['learn']:.1f} s. Target (issue 27, item 13): no slower than the fastest — {verdict}.
"""
    data = {"megabytes": megabytes, "size": size, "books": BOOKS, "phases": phases,
            "timings": {name: timing.summary() for name, timing in timings.items()},
            "tokens": {name: len(tokens) for name, tokens in learned.items()}}
    return BenchmarkResult(NAME, markdown, data)


def _our_phases(module, paths: list[Path], size: int) -> dict:
    """The seconds of bert-tf's two phases apart: counting the words, learning the pieces."""
    started = time.perf_counter()
    counts = module._count_words(paths, module.character_table(True, True), progress=False)
    counted = time.perf_counter()
    module._learn_word_pieces(counts, size, list(RESERVED), 10, 50, progress=False)
    return {"count": counted - started, "learn": time.perf_counter() - counted}


def _learned_pieces(tokens: list[str]) -> set[str]:
    """The learned tokens: not reserved, not a single character (with or without ##)."""
    return {token for token in tokens if token not in RESERVED and not token.startswith("[")
            and len(token.removeprefix("##")) > 1}


def _head(source: Path, target: Path, lines: int) -> Path:
    with source.open(encoding="utf-8") as file:
        target.write_text("".join(line for _, line in zip(range(lines), file)), encoding="utf-8")
    return target
