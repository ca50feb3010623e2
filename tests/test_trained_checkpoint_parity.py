"""The team's trained BERT-Mini in bert-tf and in transformers: the same logits, the same fill-mask, the same step.

The checkpoint (`../shared/data/pretrained/bert-mini-uncased-books`, Hugging Face format with both
pre-training heads) is loaded by both frameworks. For each task head, both take a few training steps
from identical weights (the head's initial values copied from bert-tf into torch), the same batch and
the same recipe (AdamW with its weight-decay exclusions, warm-up then linear decay, global-norm clipping
at 1), with dropout off: the losses, the gradients and the updated weights must agree. This is what
makes `benchmarks/quality.py`'s comparison of the two frameworks a comparison of the same training.

One difference is deliberate and applied on the torch side here: bert-tf's span labeler masks padding
out of the start/end softmax (`BertSpanLabeler`), so a window's loss does not depend on how much its
batch is padded; transformers' `BertForQuestionAnswering` leaves padding in the softmax. The torch
loss below masks it too (as `benchmarks.torch_reference` does).
"""

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import bert_tf  # noqa: E402
from bert_tf.checkpoints.huggingface import google_to_hf_name  # noqa: E402
from bert_tf.inspection import fill_mask, load_inspection_model  # noqa: E402

CHECKPOINT = ("pretrained", "bert-mini-uncased-books")
LEARNING_RATE = 1e-4  # the benchmark's rate for this model
WEIGHT_DECAY = 0.01
STEPS, WARMUP_STEPS, TOTAL_STEPS = 3, 1, 4  # the learning rate is 0, then the peak, then 2/3 of it


@pytest.fixture(scope="module")
def checkpoint(shared_data):
    path = shared_data.joinpath(*CHECKPOINT)
    if not path.is_dir():
        pytest.skip(f"no trained checkpoint at {path}")
    return path


def torch_inputs(features):
    return {"input_ids": torch.tensor(features["input_word_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(features["input_mask"], dtype=torch.long),
            "token_type_ids": torch.tensor(features["input_type_ids"], dtype=torch.long)}


def masked_lm_batch(tokenizer):
    preprocess = bert_tf.BertPreprocessor(tokenizer, seq_length=24)
    features = {name: value.numpy() for name, value in preprocess(
        (["the old man walked slowly down the road to the village .", "she smiled at him ."],
         ["it was a cold morning and the sky was grey .", "the ship sailed at dawn ."])).items()}
    rng = np.random.default_rng(0)
    positions = np.stack([np.sort(rng.choice(np.arange(1, int(length) - 1), 4, replace=False))
                          for length in features["input_mask"].sum(1)]).astype(np.int32)
    return features, positions


def test_pretraining_heads_give_the_logits_of_transformers(checkpoint):
    model = load_inspection_model(checkpoint)
    features, positions = masked_lm_batch(model.tokenizer)
    ours = model.require_pretrainer()({**features, "masked_lm_positions": positions})
    theirs = transformers.BertForPreTraining.from_pretrained(checkpoint).eval()
    with torch.no_grad():
        output = theirs(**torch_inputs(features))
    rows = np.arange(len(positions))[:, None]
    np.testing.assert_allclose(ours["mlm_logits"].numpy(), output.prediction_logits.numpy()[rows, positions],
                               atol=1e-4)
    np.testing.assert_allclose(ours["nsp_logits"].numpy(), output.seq_relationship_logits.numpy(), atol=1e-4)
    # The checkpoint is trained: the next-sentence head sees these pairs' order, not coin flips.
    assert np.abs(output.seq_relationship_logits.numpy()).max() > 0.5


@pytest.mark.parametrize("text", ["the king sat on his [MASK] .", "she opened the [MASK] and went out into the garden ."])
def test_fill_mask_top_five_is_the_fill_mask_pipeline_of_transformers(checkpoint, text):
    model = load_inspection_model(checkpoint)
    candidates = fill_mask(model.require_pretrainer(), model.tokenizer, text, top_k=5).spans[0].candidates
    pipeline = transformers.pipeline(
        "fill-mask", model=transformers.BertForMaskedLM.from_pretrained(checkpoint),
        tokenizer=transformers.BertTokenizer(str(checkpoint / "vocab.txt"), do_lower_case=True), top_k=5)
    theirs = pipeline(text)
    assert [candidate.text for candidate in candidates] == [answer["token_str"] for answer in theirs]
    np.testing.assert_allclose([candidate.probability for candidate in candidates],
                               [answer["score"] for answer in theirs], rtol=1e-4, atol=1e-6)
    assert candidates[0].probability > 0.05  # a trained head is confident; a random one spreads 1/30,522


# ----- one training step per task head ---------------------------------------------------------

@dataclasses.dataclass
class TaskCase:
    """A task head in both frameworks with its batch: features, labels, and how to copy the head across."""

    ours: object  # the bert-tf task model
    theirs: object  # the transformers model
    features: dict
    labels: object  # bert-tf's labels (the torch labels are made from them)
    head: dict  # transformers parameter name -> bert-tf head variable


def no_dropout_encoder(checkpoint):
    config = dataclasses.replace(bert_tf.read_checkpoint(checkpoint).config, hidden_dropout_prob=0.0,
                                 attention_probs_dropout_prob=0.0)
    return bert_tf.from_pretrained(checkpoint, config=config)


def hf_model(cls, checkpoint, **settings):
    return cls.from_pretrained(checkpoint, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **settings)


def sentence_pairs_case(checkpoint):
    tokenizer = bert_tf.BertTokenizer(checkpoint / "vocab.txt")
    preprocess = bert_tf.BertPreprocessor(tokenizer, seq_length=32)
    features = {name: value.numpy() for name, value in preprocess(
        (["the company said profits rose .", "he left early", "a fine , moving film", "no ."],
         ["profits rose , the company said .", "she stayed late into the night", "dull", "yes ."])).items()}
    ours = bert_tf.BertClassifier(no_dropout_encoder(checkpoint), num_classes=2, dropout=0.0)
    theirs = hf_model(transformers.BertForSequenceClassification, checkpoint, num_labels=2)
    head = {"classifier.weight": ours.classifier.kernel, "classifier.bias": ours.classifier.bias}
    return TaskCase(ours, theirs, features, np.array([1, 0, 0, 1]), head)


def ner_case(checkpoint):
    from pipelines.bucketing import batch_examples
    from pipelines.ner_features import ner_features

    tokenizer = bert_tf.BertTokenizer(checkpoint / "vocab.txt")
    sentences = [["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
                 ["Peter", "Blackburn"], ["BRUSSELS", "1996-08-22"]]
    tags = [[3, 0, 1, 0, 0, 0, 1, 0, 0], [2, 4], [5, 0]]
    ner = ner_features(sentences, tokenizer, 32, tags)
    features, labels = next(iter(batch_examples(ner.dataset(), ner.lengths, 8, 32, training=False, label_padding=-100)))
    ours = bert_tf.BertTokenClassifier(no_dropout_encoder(checkpoint), num_labels=6, dropout=0.0)
    theirs = hf_model(transformers.BertForTokenClassification, checkpoint, num_labels=6)
    head = {"classifier.weight": ours.classifier.kernel, "classifier.bias": ours.classifier.bias}
    return TaskCase(ours, theirs, {k: v.numpy() for k, v in features.items()}, labels.numpy(), head)


def squad_case(checkpoint):
    from pipelines.bucketing import batch_examples
    from pipelines.squad import Answer, SquadExample
    from pipelines.squad_features import squad_features

    tokenizer = bert_tf.BertTokenizer(checkpoint / "vocab.txt")
    context = ("The university's main library opened in 1963 and holds three million books. "
               "It stands beside the lake, north of the chapel built by the first students.")
    examples = [SquadExample("1", "When did the library open?", context, [Answer("1963", context.index("1963"))]),
                SquadExample("2", "Who built the chapel?", context,
                             [Answer("the first students", context.index("the first students"))])]
    squad = squad_features(examples, tokenizer, seq_length=48, max_query_length=16, doc_stride=16, with_labels=True)
    features, labels = next(iter(batch_examples(squad.dataset(), squad.lengths, 8, 48, training=False)))
    ours = bert_tf.BertSpanLabeler(no_dropout_encoder(checkpoint))
    theirs = hf_model(transformers.BertForQuestionAnswering, checkpoint)
    head = {"qa_outputs.weight": ours.span_logits.kernel, "qa_outputs.bias": ours.span_logits.bias}
    labels = {name: value.numpy() for name, value in labels.items()}
    assert labels["start_logits"].any(), "some window must hold its answer"
    return TaskCase(ours, theirs, {k: v.numpy() for k, v in features.items()}, labels, head)


def torch_loss(case: TaskCase, logits_output):
    """transformers' own loss for classification and NER; for spans, its loss with padding masked (see above)."""
    if isinstance(case.ours, bert_tf.BertSpanLabeler):
        padding = torch.tensor(case.features["input_mask"] == 0)
        losses = [torch.nn.functional.cross_entropy(logits.masked_fill(padding, -1e9),
                                                    torch.tensor(case.labels[name], dtype=torch.long))
                  for name, logits in (("start_logits", logits_output.start_logits),
                                       ("end_logits", logits_output.end_logits))]
        return (losses[0] + losses[1]) / 2
    return logits_output.loss


def torch_optimizer(model):
    """transformers Trainer's AdamW: no weight decay on biases and LayerNorm weights; bert-tf's epsilon."""
    decayed = transformers.trainer_pt_utils.get_parameter_names(model, [torch.nn.LayerNorm], ["bias", "LayerNorm.weight"])
    groups = [{"params": [p for n, p in model.named_parameters() if n in decayed], "weight_decay": WEIGHT_DECAY},
              {"params": [p for n, p in model.named_parameters() if n not in decayed], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=LEARNING_RATE, betas=(0.9, 0.999), eps=1e-6)
    return optimizer, transformers.get_linear_schedule_with_warmup(optimizer, WARMUP_STEPS, TOTAL_STEPS)


def paired_weights(case: TaskCase) -> list[tuple[str, object, object]]:
    """(transformers name, bert-tf variable, torch parameter) for every weight of the model, encoder and head."""
    parameters = dict(case.theirs.named_parameters())
    names = {f"{case.theirs.base_model_prefix}.{google_to_hf_name(name)}": variable
             for name, variable in case.ours.encoder.google_weights().items()}
    names.update(case.head)
    # Token-level heads in transformers have no pooler (bert-tf's is there, unused, and gets no gradient).
    unused = [name for name in names if name not in parameters and ".pooler." in name]
    names = {name: variable for name, variable in names.items() if name not in unused}
    assert sorted(names) == sorted(parameters) and len(names) + len(unused) == len(case.ours.trainable_variables)
    return [(name, variable, parameters[name]) for name, variable in names.items()]


def torch_values(pairs) -> dict:
    """bert-tf's weights in transformers' layout (a Dense kernel [in, out] is a Linear weight [out, in])."""
    return {name: variable.numpy().T if variable.path.endswith("kernel") else variable.numpy()
            for name, variable, _ in pairs}


CASES = {"sentence_pairs": sentence_pairs_case, "ner": ner_case, "squad": squad_case}


@pytest.mark.parametrize("name", list(CASES))
def test_training_steps_match_transformers(checkpoint, name):
    case = CASES[name](checkpoint)
    pairs = paired_weights(case)
    with torch.no_grad():  # the head's initial values, copied across
        for hf_name, variable in case.head.items():
            dict(case.theirs.named_parameters())[hf_name].copy_(torch.tensor(variable.numpy().T))
    start = torch_values(pairs)
    for weight_name, _, parameter in pairs:
        np.testing.assert_allclose(start[weight_name], parameter.detach().numpy(), atol=1e-7, err_msg=weight_name)

    case.ours.compile(optimizer=bert_tf.create_optimizer(LEARNING_RATE, TOTAL_STEPS, WARMUP_STEPS,
                                                         weight_decay=WEIGHT_DECAY))
    optimizer, schedule = torch_optimizer(case.theirs)
    case.theirs.train()
    torch_labels = ({"start_positions": None} if isinstance(case.labels, dict)
                    else {"labels": torch.tensor(case.labels, dtype=torch.long)})
    for step in range(STEPS):
        ours = float(case.ours.train_on_batch(case.features, case.labels, return_dict=True)["loss"])
        output = case.theirs(**torch_inputs(case.features), **{k: v for k, v in torch_labels.items() if v is not None})
        theirs = torch_loss(case, output)
        theirs.backward()
        torch.nn.utils.clip_grad_norm_(case.theirs.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        assert ours == pytest.approx(theirs.item(), rel=1e-4), f"loss at step {step}"

    after = torch_values(pairs)
    for weight_name, _, parameter in pairs:
        # Differences below 1/100 of a learning rate are float noise: the key biases' and the span head's bias'
        # gradients are 0 (a softmax ignores them), so their "updates" are Adam's normalised noise.
        noise = 1e-2 * LEARNING_RATE
        theirs = parameter.detach().numpy()
        np.testing.assert_allclose(after[weight_name], theirs, atol=1e-4 * np.abs(theirs).max() + noise, rtol=0,
                                   err_msg=weight_name)
        # The updates themselves (about a learning rate in size) agree, not just the weights they moved.
        moved = theirs - start[weight_name]
        np.testing.assert_allclose(after[weight_name] - start[weight_name], moved,
                                   atol=2e-2 * np.abs(moved).max() + noise, rtol=0,
                                   err_msg=f"update of {weight_name}")
