"""Tiny hand-made fine-tuning files (vocabulary, model config, classification, CoNLL, SQuAD) for the tests."""

import json
import random
from pathlib import Path

import bert_tf

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
POSITIVE = ["good", "great", "fine", "nice"]
NEGATIVE = ["bad", "awful", "poor", "sad"]
NEUTRAL = ["the", "a", "film", "was", "plot", "and", "very", "is", "it"]
NAMES = ["paris", "london", "berlin", "mary", "john", "acme"]
# "hug ##ging" and "snow ##board ##ing": words of several pieces.
WORDS = POSITIVE + NEGATIVE + NEUTRAL + NAMES + ["lives", "in", "works", "at", "hug", "##ging", "snow", "##board",
                                                 "##ing", "who", "where", "did", "go", "to", ".", ",", "?", "\""]
VOCAB = SPECIAL + WORDS


def write_vocab(directory: Path) -> Path:
    path = directory / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n")
    return path


def write_bert_config(directory: Path, max_position_embeddings: int = 64) -> Path:
    path = directory / "bert_config.json"
    bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=64, max_position_embeddings=max_position_embeddings).write_json(path)
    return path


def sentiment_rows(n: int, seed: int) -> list[tuple[str, str]]:
    """(sentence, label) pairs: label "1" when the sentence holds a positive word, "0" a negative one."""
    rng = random.Random(seed)
    rows = []
    for index in range(n):
        label = index % 2
        words = rng.sample(NEUTRAL, rng.randint(1, 5)) + [rng.choice(POSITIVE if label else NEGATIVE)]
        rng.shuffle(words)
        rows.append((" ".join(words), str(label)))
    return rows


def write_sentiment_tsv(path: Path, n: int, seed: int) -> Path:
    """An SST-2 style TSV: header `sentence<TAB>label`."""
    path.write_text("sentence\tlabel\n" + "".join(f"{text} \t{label}\n" for text, label in sentiment_rows(n, seed)))
    return path


NER_SENTENCES = [
    ("mary lives in paris .", "B-PER O O B-LOC O"),
    ("john works at acme .", "B-PER O O B-ORG O"),
    ("hugging mary in london", "O B-PER O B-LOC"),
    ("snowboarding john lives in berlin", "O B-PER O O B-LOC"),
    ("acme is in london .", "B-ORG O O B-LOC O"),
    ("john and mary", "B-PER O B-PER"),
]


def write_conll(path: Path, copies: int = 1) -> Path:
    """A CoNLL-2003 style file (word POS chunk tag) with a -DOCSTART- line."""
    lines = ["-DOCSTART- -X- -X- O", ""]
    for _ in range(copies):
        for words, tags in NER_SENTENCES:
            lines += [f"{word} NN I-NP {tag}" for word, tag in zip(words.split(), tags.split())] + [""]
    path.write_text("\n".join(lines) + "\n")
    return path


SQUAD_PARAGRAPHS = [
    ("mary lives in paris . john works at acme .",
     [("who lives in paris ?", "mary"), ("where does john work ?", "acme"), ("where did mary go ?", "paris")]),
    ("john lives in london and mary works at acme in berlin .",
     [("who lives in london ?", "john"), ("where is acme ?", "berlin")]),
]


def squad_json(copies: int = 1) -> dict:
    """SQuAD v1.1 JSON of the paragraphs above (answers at their first occurrence)."""
    paragraphs = []
    for copy in range(copies):
        for index, (context, questions) in enumerate(SQUAD_PARAGRAPHS):
            qas = [{"id": f"q{copy}-{index}-{number}", "question": question,
                    "answers": [{"text": answer, "answer_start": context.index(answer)}]}
                   for number, (question, answer) in enumerate(questions)]
            paragraphs.append({"context": context, "qas": qas})
    return {"version": "1.1", "data": [{"title": "tiny", "paragraphs": paragraphs}]}


def write_squad(path: Path, copies: int = 1) -> Path:
    path.write_text(json.dumps(squad_json(copies)))
    return path
