"""The transformers/PyTorch reference of `benchmarks.quality`: the run `bert-tf finetune` makes, made by transformers.

    python -m benchmarks.torch_reference --config RUN.json --out RESULT.json

RUN.json holds the `FinetuneConfig` of a `bert-tf finetune` command (`benchmarks.quality` writes it from the
command's own flags). The reference:
- trains `BertForSequenceClassification`, `BertForTokenClassification` or `BertForQuestionAnswering` from
  `config.init` on the batches `bert-tf finetune` trains on (`bert_tf.training.finetune.training_data` with the same
  seed: the same examples in the same order, with the same padding, NER first-piece labels and SQuAD windows),
  for the same epochs, with the same recipe: PyTorch's AdamW with bert-tf's betas and epsilon and the weight
  decay of transformers' Trainer (none on biases and LayerNorm weights), `get_linear_schedule_with_warmup`,
  gradients clipped to bert-tf's global norm, the checkpoint's dropout in the encoder and `config.dropout`
  before the head, the head initialised by transformers (seeded with `config.seed`);
- scores the dev file through its own text pipeline: the Rust `tokenizers` WordPiece tokenizer; NER tags from
  each word's first piece (words tokenized one by one, long sentences cut into windows of whole words); SQuAD
  as google-research/bert's `run_squad.py` does it (the question's first `max_query_length` tokens, doc-stride
  windows, n-best start x end pairs, max-context windows) on the tokenizer's character offsets. Scores are the
  official ones (`bert_tf.metrics`: GLUE accuracy and F1, conlleval, evaluate-v1.1), which only compare answers;
- also scores the same model through bert-tf's dev pipeline (`FinetuneTask.evaluate`): where the two scores of
  one model differ, the two pipelines do.

One choice is bert-tf's, applied here too: the SQuAD loss leaves padding out of the start/end softmax
(`span_loss`; transformers' own loss keeps it in), so a window's loss does not depend on its batch's padding.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

EVAL_BATCH_SIZE = 64


def torch_optimizer(model, learning_rate: float, weight_decay: float, steps: int, warmup_steps: int):
    """PyTorch's AdamW with bert-tf's settings and transformers Trainer's weight-decay exclusions, and the
    linear warm-up and decay schedule of transformers: `(optimizer, schedule)`."""
    import torch
    import transformers

    from bert_tf.optimization import OptimizerConfig

    recipe = OptimizerConfig(learning_rate, steps, warmup_steps, weight_decay=weight_decay)
    decayed = set(transformers.trainer_pt_utils.get_parameter_names(model, [torch.nn.LayerNorm],
                                                                    ["bias", "LayerNorm.weight"]))
    groups = [{"params": [p for n, p in model.named_parameters() if n in decayed], "weight_decay": weight_decay},
              {"params": [p for n, p in model.named_parameters() if n not in decayed], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=learning_rate, betas=(recipe.beta_1, recipe.beta_2), eps=recipe.epsilon)
    return optimizer, transformers.get_linear_schedule_with_warmup(optimizer, warmup_steps, steps)


def torch_updates(model, learning_rate: float, weight_decay: float, steps: int, warmup_steps: int):
    """`update(loss) -> float`: one step of the recipe (backward, global-norm clipping at bert-tf's norm,
    `torch_optimizer`'s AdamW and schedule), the loss as a number."""
    import torch

    from bert_tf.optimization import OptimizerConfig

    optimizer, schedule = torch_optimizer(model, learning_rate, weight_decay, steps, warmup_steps)
    clipnorm = OptimizerConfig(learning_rate, steps).clipnorm

    def update(loss) -> float:
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clipnorm)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        return loss.item()

    return update


def span_loss(start_logits, end_logits, input_mask, start_positions, end_positions):
    """The mean of the start and end cross-entropies, padding (input_mask 0) left out of the softmax."""
    import torch

    padding = torch.as_tensor(np.asarray(input_mask) == 0)
    losses = [torch.nn.functional.cross_entropy(logits.masked_fill(padding, -1e9),
                                                torch.as_tensor(np.asarray(positions), dtype=torch.long))
              for logits, positions in ((start_logits, start_positions), (end_logits, end_positions))]
    return (losses[0] + losses[1]) / 2


def torch_inputs(features) -> dict:
    import torch

    return {"input_ids": torch.as_tensor(np.asarray(features["input_word_ids"]), dtype=torch.long),
            "attention_mask": torch.as_tensor(np.asarray(features["input_mask"]), dtype=torch.long),
            "token_type_ids": torch.as_tensor(np.asarray(features["input_type_ids"]), dtype=torch.long)}


def build_model(config, label_names):
    """The transformers model of `config.task` from `config.init`, its head made by transformers."""
    import transformers

    transformers.logging.set_verbosity_error()  # the load report lists the new head's weights as missing
    if config.task == "squad":
        return transformers.BertForQuestionAnswering.from_pretrained(config.init)
    model_class = {"classify": transformers.BertForSequenceClassification,
                   "ner": transformers.BertForTokenClassification}[config.task]
    return model_class.from_pretrained(config.init, num_labels=len(label_names), classifier_dropout=config.dropout)


def batch_loss(model, task: str, features, labels):
    import torch

    output = model(**torch_inputs(features))
    if task == "squad":
        return span_loss(output.start_logits, output.end_logits, features["input_mask"],
                         labels["start_logits"], labels["end_logits"])
    logits = output.logits.reshape(-1, output.logits.shape[-1])
    return torch.nn.functional.cross_entropy(logits, torch.as_tensor(np.asarray(labels), dtype=torch.long).reshape(-1),
                                             ignore_index=-100)


def train(model, config, training) -> list[float]:
    """Fits `model` on `training.batches`, epoch after epoch; the mean training loss of each epoch."""
    learning_rate = config.peak_learning_rate(model.config)  # transformers' BertConfig has hidden_size too
    update = torch_updates(model, learning_rate, config.weight_decay, training.steps,
                           int(training.steps * config.warmup_proportion))
    model.train()
    epoch_losses = []
    for _ in range(config.epochs):
        losses = []
        for features, labels in training.batches:
            labels = {k: v.numpy() for k, v in labels.items()} if isinstance(labels, dict) else labels.numpy()
            losses.append(update(batch_loss(model, config.task, {k: v.numpy() for k, v in features.items()}, labels)))
        epoch_losses.append(float(np.mean(losses)))
    return epoch_losses


# ----- the reference's own dev pipeline ---------------------------------------------------------------

def padded(rows: list[list[int]]) -> np.ndarray:
    out = np.zeros((len(rows), max(map(len, rows))), np.int64)
    for index, row in enumerate(rows):
        out[index, :len(row)] = row
    return out


def run_model(model, sequences: list[tuple[list[int], list[int]]]) -> list:
    """The model's outputs for (ids, type ids) sequences, per sequence cut to its length: logits, or (start, end)."""
    import torch

    outputs = []
    for first in range(0, len(sequences), EVAL_BATCH_SIZE):
        batch = sequences[first:first + EVAL_BATCH_SIZE]
        ids = padded([ids for ids, _ in batch])
        features = {"input_word_ids": ids, "input_type_ids": padded([types for _, types in batch]),
                    "input_mask": (np.arange(ids.shape[1]) < np.array([len(ids) for ids, _ in batch])[:, None])}
        with torch.no_grad():
            output = model(**torch_inputs(features))
        for row, (sequence_ids, _) in enumerate(batch):
            if hasattr(output, "start_logits"):
                outputs.append((output.start_logits[row, :len(sequence_ids)].numpy(),
                                output.end_logits[row, :len(sequence_ids)].numpy()))
            else:
                logits = output.logits[row].numpy()
                outputs.append(logits[:len(sequence_ids)] if logits.ndim == 2 else logits)
    return outputs


def classification_predictions(model, wordpiece, examples, seq_length: int) -> np.ndarray:
    """The predicted class id of every example (pairs cut `longest_first` to `seq_length` tokens)."""
    wordpiece.enable_truncation(seq_length, strategy="longest_first")
    inputs = examples.texts if examples.text_pairs is None else list(zip(examples.texts, examples.text_pairs))
    encodings = wordpiece.encode_batch(inputs)
    wordpiece.no_truncation()
    return np.argmax(np.stack(run_model(model, [(encoding.ids, encoding.type_ids) for encoding in encodings])), axis=1)


def word_windows(word_pieces: list[list[int]], max_pieces: int) -> list[tuple[int, int]]:
    """Consecutive whole-word windows (first word, end word) of at most `max_pieces` pieces each."""
    windows, first, count = [], 0, 0
    for index, pieces in enumerate(word_pieces):
        if count and count + len(pieces) > max_pieces:
            windows.append((first, index))
            first, count = index, 0
        count += len(pieces)
    windows.append((first, len(word_pieces)))
    return windows


def ner_predictions(model, wordpiece, sentences, label_names, seq_length: int) -> list[list[str]]:
    """The predicted tag of every word of every sentence: the argmax at the word's first piece. A word without
    pieces is `[UNK]`; a sentence longer than `seq_length - 2` pieces is tagged in windows of whole words."""
    vocab = wordpiece.get_vocab()
    cls, sep, unk = vocab["[CLS]"], vocab["[SEP]"], vocab["[UNK]"]
    words = [word for sentence in sentences for word in sentence.words]
    pieces = [encoding.ids or [unk] for encoding in wordpiece.encode_batch(words, add_special_tokens=False)]
    sequences, first_pieces, owners = [], [], []  # per window: ids, first-piece positions, (sentence, first word)
    start = 0
    for sentence_index, sentence in enumerate(sentences):
        sentence_pieces = pieces[start:start + len(sentence.words)]
        start += len(sentence.words)
        for first, end in word_windows(sentence_pieces, seq_length - 2):
            window = [piece[:seq_length - 2] for piece in sentence_pieces[first:end]]
            ids = [cls] + [piece for word in window for piece in word] + [sep]
            sequences.append((ids, [0] * len(ids)))
            first_pieces.append(1 + np.cumsum([0] + [len(word) for word in window[:-1]]))
            owners.append((sentence_index, first))
    predicted = [[None] * len(sentence.words) for sentence in sentences]
    for logits, positions, (sentence_index, first) in zip(run_model(model, sequences), first_pieces, owners):
        for offset, position in enumerate(positions):
            predicted[sentence_index][first + offset] = label_names[int(np.argmax(logits[position]))]
    return predicted


def squad_windows(question_ids, context_ids, seq_length, max_query_length, doc_stride):
    """google-research/bert's windows: the question tokens kept, and (doc start, doc length) of each window."""
    question = question_ids[:max_query_length]
    max_doc = seq_length - len(question) - 3
    windows, start = [], 0
    while True:
        length = min(len(context_ids) - start, max_doc)
        windows.append((start, length))
        if start + length >= len(context_ids):
            return question, windows
        start += min(length, doc_stride)


def is_max_context(windows, window_index: int, token: int) -> bool:
    """google-research/bert's `_check_is_max_context`: the window where `token` has the most context."""
    best_score, best_index = None, None
    for index, (start, length) in enumerate(windows):
        if not start <= token < start + length:
            continue
        score = min(token - start, start + length - 1 - token) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return best_index == window_index


def squad_predictions(model, wordpiece, examples, spec) -> dict[str, str]:
    """Each question's answer text: the best n-best start x end pair over its windows (run_squad.py's rules), as
    the context's characters from the first token's start to the last token's end."""
    vocab = wordpiece.get_vocab()
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    questions = wordpiece.encode_batch([example.question for example in examples], add_special_tokens=False)
    contexts = wordpiece.encode_batch([example.context for example in examples], add_special_tokens=False)
    sequences, owners = [], []  # owners: (example index, its windows, window index, context offset)
    for index, (question, context) in enumerate(zip(questions, contexts)):
        question_ids, windows = squad_windows(question.ids, context.ids, spec.seq_length, spec.max_query_length,
                                              spec.doc_stride)
        for window_index, (start, length) in enumerate(windows):
            ids = [cls] + question_ids + [sep] + context.ids[start:start + length] + [sep]
            sequences.append((ids, [0] * (len(question_ids) + 2) + [1] * (length + 1)))
            owners.append((index, windows, window_index, len(question_ids) + 2))
    best = [(-np.inf, None, None)] * len(examples)  # per example: (score, first token, last token)
    for (start_logits, end_logits), (index, windows, window_index, offset) in zip(run_model(model, sequences), owners):
        doc_start, doc_length = windows[window_index]
        starts = np.argsort(-start_logits, kind="stable")[:spec.n_best_size]
        ends = np.argsort(-end_logits, kind="stable")[:spec.n_best_size]
        for start in starts:
            for end in ends:
                first, last = doc_start + start - offset, doc_start + end - offset
                if not (offset <= start < offset + doc_length and offset <= end < offset + doc_length):
                    continue
                if end < start or end - start + 1 > spec.max_answer_length:
                    continue
                if not is_max_context(windows, window_index, first):
                    continue
                score = float(start_logits[start] + end_logits[end])
                if score > best[index][0]:
                    best[index] = (score, first, last)
    return {example.question_id: "" if first is None else
            example.context[context.offsets[first][0]:context.offsets[last][1]]
            for example, context, (_, first, last) in zip(examples, contexts, best)}


def own_pipeline_predictions(model, config, task, vocab_file: Path, lower_case: bool):
    """Dev predictions through the reference's own tokenization, alignment and decoding: class ids, word tags,
    or {question id: answer text}."""
    from tokenizers import BertWordPieceTokenizer

    wordpiece = BertWordPieceTokenizer(str(vocab_file), lowercase=lower_case)
    examples = task.read(config.dev_file)
    spec = task.spec
    if config.task == "classify":
        return classification_predictions(model, wordpiece, examples, spec.seq_length)
    if config.task == "ner":
        return ner_predictions(model, wordpiece, examples.sentences, list(spec.label_names), spec.seq_length)
    return squad_predictions(model, wordpiece, examples, spec)


def official_scores(config, task, predictions) -> dict:
    """The official dev scores of own-pipeline predictions: GLUE accuracy and F1, conlleval, evaluate-v1.1."""
    from bert_tf.tasks.classification.metrics import precision_recall_f1
    from bert_tf.tasks.ner.metrics import ner_scores
    from bert_tf.tasks.squad.metrics import squad_scores

    examples = task.read(config.dev_file)
    if config.task == "classify":
        label_names = list(task.spec.label_names)
        gold = np.array([label_names.index(label) for label in examples.labels])
        scores = {"accuracy": float(np.mean(predictions == gold))}
        if len(label_names) == 2:
            scores["f1"] = float(precision_recall_f1(gold, predictions, classes=[1])["f1"][0])
        return scores
    if config.task == "ner":
        return ner_scores([sentence.tags for sentence in examples.sentences], predictions)
    return squad_scores(predictions, {example.question_id: [answer.text for answer in example.answers]
                                      for example in examples})


class TorchModel:
    """A transformers model in a Keras model's place for `FinetuneTask.evaluate` (its one call: `predict_on_batch`)."""

    def __init__(self, model):
        self.model = model

    def predict_on_batch(self, features):
        import torch

        features = {name: np.asarray(value) for name, value in features.items()}
        with torch.no_grad():
            output = self.model(**torch_inputs(features))
        if hasattr(output, "start_logits"):
            return {"start_logits": output.start_logits.numpy(), "end_logits": output.end_logits.numpy()}
        return output.logits.numpy()


def run_reference(config) -> dict:
    """Trains and scores the reference for a `FinetuneConfig`; what `benchmarks.quality` records of it."""
    import keras
    import torch

    from bert_tf.tokenizer import BertTokenizer
    from bert_tf.training.finetune import load_encoder, training_data

    keras.utils.set_random_seed(config.seed)  # as `finetune` does first: the batches' order follows from it
    _, vocab_file, lower_case = load_encoder(config)
    training = training_data(config, BertTokenizer(vocab_file, lower_case))
    torch.manual_seed(config.seed)
    model = build_model(config, training.task.spec.label_names)
    started = time.perf_counter()
    epoch_losses = train(model, config, training)
    train_seconds = time.perf_counter() - started
    model.eval()
    task = training.task
    dev = task.prepare(task.read(config.dev_file), training=False)
    return {
        "scores": official_scores(config, task, own_pipeline_predictions(model, config, task, vocab_file, lower_case)),
        "scores_through_bert_tf": {name: value for name, value in task.evaluate(TorchModel(model), dev,
                                                                                EVAL_BATCH_SIZE).items()
                                   if isinstance(value, (int, float))},
        "epoch_losses": epoch_losses,
        "train_examples": len(training.examples),
        "train_steps": training.steps,
        "train_seconds": round(train_seconds, 1),
        "versions": {"torch": torch.__version__, "transformers": __import__("transformers").__version__},
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, required=True, help="the run's FinetuneConfig as JSON")
    parser.add_argument("--out", type=Path, required=True, help="where the result JSON goes")
    args = parser.parse_args(argv)
    from bert_tf.training.finetune_config import FinetuneConfig

    config = FinetuneConfig(**json.loads(args.config.read_text(encoding="utf-8")))
    result = run_reference(config)
    args.out.write_text(json.dumps({"config": dataclasses.asdict(config), **result}, indent=2) + "\n",
                        encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
