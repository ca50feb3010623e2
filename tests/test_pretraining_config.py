"""What a pre-training run takes from its vocabulary: the model's vocab_size, and the casing (`bert-tf pretrain`)."""

import re

import pytest

import bert_tf
from bert_tf.training import PretrainingConfig, build_pretrainer
from bert_tf.vocabulary import SPECIAL_TOKENS
from bert_tf_cli import build_parser, main
from bert_tf_cli.pretrain import config_from_args


def write_vocab(path, size=None, words=("the", "cat", "##s")):
    """A vocab.txt: the special tokens, then `words`, or generated tokens up to `size`."""
    if size is not None:
        words = [f"w{i}" for i in range(size - len(SPECIAL_TOKENS))]
    path.write_text("\n".join([*SPECIAL_TOKENS, *words]) + "\n", encoding="utf-8")
    return path


def word_embedding_rows(pretrainer):
    return pretrainer.encoder.embeddings.word_embeddings.embeddings.shape[0]


@pytest.mark.parametrize("size", [4_000, 32_000])  # 32,000 > the presets' 30,522
def test_a_preset_takes_the_vocabulary_size(tmp_path, size):
    vocab = write_vocab(tmp_path / "vocab.txt", size)
    pretrainer = build_pretrainer(PretrainingConfig(output_dir=str(tmp_path), model="tiny", vocab_file=str(vocab)))
    assert pretrainer.encoder.config.vocab_size == word_embedding_rows(pretrainer) == size


def test_a_config_file_or_checkpoint_of_another_size_is_an_error(tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt", 4_000)
    config_file = tmp_path / "bert_config.json"
    bert_tf.BertConfig.preset("tiny").write_json(config_file)  # vocab_size 30,522
    with pytest.raises(ValueError) as error:
        build_pretrainer(PretrainingConfig(output_dir=str(tmp_path), model=str(config_file), vocab_file=str(vocab)))
    assert all(text in str(error.value) for text in ("30,522", "4,000", str(config_file), str(vocab)))

    checkpoint = tmp_path / "checkpoint"
    bert_tf.save_pretrained(bert_tf.BertPretrainer(bert_tf.BertModel(bert_tf.BertConfig.preset("tiny", vocab_size=9))),
                            checkpoint)
    expected = f"{checkpoint} has vocab_size 9 but {vocab} has 4,000 tokens"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}"):
        build_pretrainer(PretrainingConfig(output_dir=str(tmp_path), init_checkpoint=str(checkpoint),
                                           vocab_file=str(vocab)))


@pytest.fixture
def vocabs(tmp_path):
    return {"uncased": write_vocab(tmp_path / "uncased.txt"),
            "cased": write_vocab(tmp_path / "cased.txt", words=("The", "the", "Cat", "##s"))}


def pretrain_args(tmp_path, vocab, *flags):
    return ["pretrain", "--corpus", str(tmp_path / "corpus.txt"), "--vocab", str(vocab), "--out", str(tmp_path / "run"),
            "--steps", "1", *flags]


@pytest.mark.parametrize("casing", ["uncased", "cased"])
def test_pretrain_takes_the_casing_from_the_vocabulary(tmp_path, vocabs, casing):
    args = build_parser().parse_args(pretrain_args(tmp_path, vocabs[casing]))
    assert config_from_args(args).lower_case == (casing == "uncased")
    args = build_parser().parse_args(pretrain_args(tmp_path, vocabs[casing], f"--{casing}"))
    assert config_from_args(args).lower_case == (casing == "uncased")


@pytest.mark.parametrize("casing, flag", [("uncased", "--cased"), ("cased", "--uncased")])
def test_pretrain_refuses_a_casing_flag_that_contradicts_the_vocabulary(tmp_path, capsys, vocabs, casing, flag):
    assert main(pretrain_args(tmp_path, vocabs[casing], flag)) == 2
    message = capsys.readouterr().err
    assert message.startswith(f"bert-tf pretrain: error: {flag} contradicts {vocabs[casing]}, ")
    assert f" {casing} vocabulary" in message
    assert message.count("\n") == 1 and "lower_case" not in message


def test_the_library_names_its_keyword_argument(tmp_path, vocabs):
    with pytest.raises(ValueError, match=f"^lower_case=False contradicts {re.escape(str(vocabs['uncased']))}"):
        PretrainingConfig(output_dir=str(tmp_path), vocab_file=str(vocabs["uncased"]), lower_case=False)
    with pytest.raises(ValueError, match=f"^lower_case=True contradicts {re.escape(str(vocabs['cased']))}"):
        PretrainingConfig(output_dir=str(tmp_path), vocab_file=str(vocabs["cased"]), lower_case=True)


@pytest.mark.parametrize("steps, warmup", [(5, 0), (50, 5), (999, 99), (5000, 100)])
def test_warm_up_defaults_to_a_tenth_of_the_steps_at_most_100(tmp_path, steps, warmup):
    config = PretrainingConfig(output_dir=str(tmp_path), num_train_steps=steps)
    assert config.num_warmup_steps == warmup
    assert config.optimizer_config().schedule().num_warmup_steps == warmup  # a schedule the optimizer accepts


def test_a_warm_up_as_long_as_the_run_is_an_error_naming_the_flags(tmp_path, capsys, vocabs):
    with pytest.raises(ValueError, match=r"^PretrainingConfig: num_warmup_steps must be at least 0 and below "
                                         r"num_train_steps \(50\), got 50\.$"):
        PretrainingConfig(output_dir=str(tmp_path), num_train_steps=50, num_warmup_steps=50)
    assert main(pretrain_args(tmp_path, vocabs["uncased"], "--steps", "50", "--num-warmup-steps", "100")) == 2
    assert capsys.readouterr().err == ("bert-tf pretrain: error: --num-warmup-steps must be at least 0 and below --steps "
                                       "(50), got 100; leave it out for a tenth of --steps.\n")
    assert main(pretrain_args(tmp_path, vocabs["uncased"], "--steps", "0")) == 2
    assert capsys.readouterr().err == "bert-tf pretrain: error: --steps must be at least 1, got 0.\n"
