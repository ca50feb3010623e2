"""`bert_tf.cpu_features.bfloat16_warning`: which CPUs are told that bf16 is slower than float32 there.

The flags are substituted: the machine running the tests has whichever CPU it has.
"""

import pytest

from bert_tf import cpu_features
from bert_tf.cpu_features import bfloat16_warning

ZEN3 = frozenset({"sse4_2", "avx", "avx2", "fma", "bmi2"})  # AVX2 only: no bfloat16 units
GRAVITON2 = frozenset({"fp", "asimd", "asimddp", "lrcpc"})  # Neoverse N1: no BF16 extension


@pytest.mark.parametrize("flags, machine, missing", [
    (ZEN3, "x86_64", "avx512_bf16 or amx_bf16"),
    (ZEN3 | {"avx512f", "avx512_vnni"}, "x86_64", "avx512_bf16 or amx_bf16"),  # Ice Lake: VNNI, no BF16
    (GRAVITON2, "aarch64", "bf16"),
])
def test_a_cpu_without_bfloat16_units_is_told_that_bf16_is_slower_naming_the_missing_feature(flags, machine, missing):
    warning = bfloat16_warning(flags, machine)
    assert warning.startswith(f"bf16 is slower than float32 on this CPU: it has no {missing} (no bfloat16 units)")
    assert "\n" not in warning


@pytest.mark.parametrize("flags, machine", [
    (ZEN3 | {"avx512f", "avx512_bf16"}, "x86_64"),  # Zen 4, Cooper Lake
    (ZEN3 | {"avx512f", "amx_tile", "amx_bf16"}, "x86_64"),  # Sapphire Rapids
    (GRAVITON2 | {"bf16", "i8mm"}, "aarch64"),  # Graviton 3
    (frozenset(), "x86_64"),  # flags unknown (no /proc/cpuinfo): nothing is said
    (ZEN3, "riscv64"),  # an architecture whose bfloat16 flags are not known here
])
def test_no_warning_where_the_cpu_has_bfloat16_units_or_its_flags_are_unknown(flags, machine):
    assert bfloat16_warning(flags, machine) is None


def test_this_cpus_flags_are_read_from_proc_cpuinfo(monkeypatch):
    flags = cpu_features.cpu_flags()
    if not flags:
        pytest.skip("no /proc/cpuinfo flags here")
    assert flags & {"sse2", "fp", "asimd"}  # every x86-64 CPU has SSE2; every ARM64 CPU FP and ASIMD
    monkeypatch.setattr(cpu_features, "cpu_flags", lambda: ZEN3)
    assert bfloat16_warning(machine="x86_64") is not None
