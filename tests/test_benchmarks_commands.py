"""The commands benchmarks/RESULTS.md records run as written from any checkout: the team data as `../shared/data`,
outputs under `"$WORK"` (a folder the reader chooses), students by preset name, no file of the machine that ran them."""

import tempfile
from pathlib import Path

from benchmarks import distillation
from benchmarks.report import RESULTS_MD
from benchmarks.settings import DATA_DIR, Settings


def test_results_record_no_path_of_the_machine_that_ran_them():
    text = RESULTS_MD.read_text(encoding="utf-8")
    commands = [line for line in text.splitlines() if "bert-tf " in line or "python -m " in line]
    machine = (f"{DATA_DIR}/", f"{tempfile.gettempdir()}/")
    assert [line for line in commands if any(path in line for path in machine)] == []
    assert "--student bert_L2_H128 " in text and ".json --learning-rate" not in text


def test_a_random_student_is_its_preset_and_one_with_the_teachers_heads_a_file_kept_in_the_work_folder(tmp_path):
    import bert_tf

    teacher = bert_tf.BertConfig.preset("mini", vocab_size=100)
    flags = distillation.STUDENT_NAMED["L2/H128 random"].flags(teacher, tmp_path, Settings(quick=True))
    assert flags[:2] == ["--student", "bert_L2_H128"]
    flags = distillation.STUDENT_NAMED["L4/H128 random + layer losses"].flags(teacher, tmp_path, Settings(quick=True))
    config = bert_tf.BertConfig.from_json_file(Path(flags[1]))
    assert Path(flags[1]).parent == tmp_path and config.num_attention_heads == teacher.num_attention_heads == 4
