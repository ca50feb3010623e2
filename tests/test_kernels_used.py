"""What the benchmarks say about the kernels a runtime ran (`benchmarks.kernels_used`), and the AVX2-only CPU they can
be run as (`benchmarks.avx2_only`)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import avx2_only
from benchmarks.kernels_used import _kernels, isa_of, product_kernels

# Inner loops as objdump prints them: ONNX Runtime's u8×s8 kernels on AVX2, on AVX-512 VNNI and on AMX, XNNPACK's
# widening int8 kernel, a float32 one.
MLAS_AVX2 = ["vpbroadcastd (%rdi),%ymm2", "vpmaddubsw %ymm0,%ymm2,%ymm3", "vpmaddwd %ymm12,%ymm3,%ymm3",
             "vpaddd %ymm3,%ymm4,%ymm4"]
MLAS_VNNI = ["vpbroadcastd (%rdi),%zmm2", "vpdpbusds %zmm0,%zmm2,%zmm4"]
MLAS_AMX = ["tileloadd (%rsi,%rcx,1),%tmm4", "tdpbusd %tmm4,%tmm6,%tmm0"]
WIDENING = ["vpmovsxbw (%rax),%ymm1", "vpmaddwd %ymm1,%ymm0,%ymm2", "vpaddd %ymm2,%ymm3,%ymm3"]
FLOAT32 = ["vbroadcastss (%rax),%zmm1", "vfmadd231ps %zmm1,%zmm0,%zmm2"]


@pytest.mark.parametrize("instructions, isa", [
    (MLAS_AVX2, "AVX2 u8×s8 (vpmaddubsw)"), (MLAS_VNNI, "AVX-512 VNNI u8×s8 (vpdpbusd)"),
    ([line.replace("zmm", "ymm").replace("vpdpbusds", "{vex} vpdpbusds") for line in MLAS_VNNI],
     "AVX-VNNI u8×s8 (vpdpbusd, ymm)"),
    (MLAS_AMX, "AMX (tile products)"), (WIDENING, "AVX2 s16 products (vpmaddwd)"), (FLOAT32, "AVX-512 float32 FMA"),
    (["mov %rax,%rbx", "add $0x1,%rax"], None),
])
def test_the_instructions_of_a_kernel_tell_its_instruction_set(instructions, isa):
    assert isa_of(instructions) == isa


def test_a_perf_report_gives_named_kernels_and_sums_a_stripped_librarys_addresses():
    report = """
    40.00%  libpywrap_litert_common.so  [.] xnn_qd8_f32_qc8w_gemm_minmax_ukernel_4x8c8__avx2
    20.00%  onnxruntime_pybind11_state.so  [.] 0x000000000145f0b3
    15.00%  onnxruntime_pybind11_state.so  [.] 0x000000000145f10f
    12.00%  libpywrap_litert_common.so  [.] thread_main
     9.00%  libc.so.6  [.] __memmove_avx512_unaligned_erms
     4.00%  [kernel.kallsyms]  [k] finish_task_switch
"""
    kernels = _kernels(report, paths={}, top=8)  # no path to the stripped library: its instructions are not read
    assert [(kernel["kernel"], kernel["isa"]) for kernel in kernels] == [
        ("xnn_qd8_f32_qc8w_gemm_minmax_ukernel_4x8c8__avx2", "avx2"),
        ("onnxruntime_pybind11_state.so code", None), ("thread_main", None)]
    assert kernels[1]["share"] == pytest.approx(0.35)
    assert [kernel["kernel"] for kernel in product_kernels(kernels)] == [kernels[0]["kernel"]]
    assert product_kernels(kernels[1:]) == [kernels[1]]  # none known: the hottest


@pytest.mark.skipif(shutil.which("cc") is None or "cpuid_fault" not in Path("/proc/cpuinfo").read_text(),
                    reason="needs a C compiler and CPUID faulting")
def test_under_avx2_only_a_process_and_its_children_see_no_avx512_in_cpuid():
    """numpy reads CPUID itself: under the mask it finds AVX2 and no AVX-512, in a grandchild too."""
    probe = ("import subprocess, sys; from numpy._core._multiarray_umath import __cpu_features__ as f; "
             "print(f['AVX2'], f['AVX512F'], f['AVX512VNNI'], f['AVX512BF16'])")
    nested = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {probe!r}])"
    output = subprocess.run([sys.executable, "-m", "benchmarks.avx2_only", sys.executable, "-c", nested],
                            capture_output=True, text=True, check=True).stdout
    assert output.split() == ["True", "False", "False", "False"]
    assert "avx512f" in avx2_only.HIDDEN_FLAGS and "avx2" not in avx2_only.HIDDEN_FLAGS
