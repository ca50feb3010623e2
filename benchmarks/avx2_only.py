"""Runs a command as on an AVX2-only x86 CPU: CPUID hides AVX-512, AVX-VNNI and AMX from it and its children.

For the figures of CPUs without AVX-512 (AMD Zen 3, Intel Haswell to Comet Lake) on a CPU that has it.
oneDNN (TensorFlow), XNNPACK (LiteRT), ONNX Runtime's MLAS, OpenVINO, OpenBLAS and numpy pick their kernels
from CPUID, so under this they pick their AVX2 ones (checked: oneDNN's verbose log says "isa:Intel AVX2",
perf shows XNNPACK running `xnn_qd8_f32_qc8w_gemm_minmax_ukernel_4x8c8__avx2`). Only oneDNN has a switch of its
own (ONEDNN_MAX_CPU_ISA); XNNPACK, MLAS and LiteRT have none. The kernels then run at this CPU's clock, caches
and memory, not a Zen 3's: compare the contenders' ratios within one run, not their rates with another machine's.
glibc picks its string functions before this library loads: they keep their AVX-512 versions.

How: `avx2_only.c`, compiled here by `cc` into a cache folder and loaded by LD_PRELOAD, turns on Linux's
CPUID faulting and answers each CPUID itself (needs the "cpuid_fault" CPU flag: most Intel CPUs and VMs).
BERT_TF_CPUID_MASK=avx2 tells `benchmarks.machine` to record the flags as the programs see them.

    python -m benchmarks.avx2_only python -m benchmarks.run --only cpu_serving --output-dir "$WORK"/avx2
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_suffix(".c")
MASK_VARIABLE = "BERT_TF_CPUID_MASK"
# The /proc/cpuinfo names of what avx2_only.c hides (its leaf-7 bits).
HIDDEN_FLAGS = frozenset({
    "avx512f", "avx512dq", "avx512ifma", "avx512pf", "avx512er", "avx512cd", "avx512bw", "avx512vl", "avx512vbmi",
    "avx512_vbmi2", "avx512_vnni", "avx512_bitalg", "avx512_vpopcntdq", "avx512_4vnniw", "avx512_4fmaps",
    "avx512_vp2intersect", "amx_bf16", "avx512_fp16", "amx_tile", "amx_int8", "avx_vnni", "avx512_bf16", "avx_ifma",
    "avx_vnni_int8", "avx_ne_convert", "amx_complex"})


def library() -> Path:
    """The compiled `avx2_only.c` (built once per source version, in the system's temporary folder)."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    built = Path(tempfile.gettempdir()) / f"bert_tf_avx2_only_{digest}.so"
    if not built.exists():
        staging = built.with_name(f".{built.name}.{os.getpid()}")
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(staging), str(SOURCE)], check=True)
        staging.replace(built)
    return built


def masked_environment(environment: dict[str, str]) -> dict[str, str]:
    """`environment` with the library preloaded (ahead of any other) and BERT_TF_CPUID_MASK set."""
    preload = " ".join(filter(None, [str(library()), environment.get("LD_PRELOAD")]))
    return {**environment, "LD_PRELOAD": preload, MASK_VARIABLE: "avx2"}


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit(__doc__)
    if "cpuid_fault" not in Path("/proc/cpuinfo").read_text():
        sys.exit("avx2_only: this CPU (or its hypervisor) has no CPUID faulting (cpuid_fault flag): cannot mask CPUID.")
    os.execvpe(argv[0], argv, masked_environment(dict(os.environ)))


if __name__ == "__main__":
    main(sys.argv[1:])
