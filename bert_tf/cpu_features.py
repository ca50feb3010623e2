"""Whether this CPU has bfloat16 units: without them bfloat16 is slower than float32, and bert-tf says so.

bfloat16 products are fast only where the CPU multiplies bfloat16 itself: on x86 with AVX512_BF16
(Intel Cooper Lake and later Xeons, AMD Zen 4 and later) or AMX-BF16 (Intel Sapphire Rapids and later), on
ARM with the BF16 extension (Neoverse V1/N2, Graviton 3 and later). Elsewhere oneDNN converts to float32 and
back around float32 products: on an AVX2-only AMD EPYC (Zen 3) the bf16 SavedModel ran 0.73× the float32
one (benchmarks/RESULTS.md, issue 39). `bfloat16_warning` is the one line that `bert-tf export --quantize
bf16` and `bert-tf serve` (loading a bf16 version) log on such a CPU.

The flags are the kernel's (`/proc/cpuinfo`, Linux): elsewhere nothing is known and nothing is said.

Example:
    >>> bfloat16_warning(frozenset({"avx2", "fma"}), "x86_64")[:58]
    'bf16 is slower than float32 on this CPU: it has no avx512_'
    >>> bfloat16_warning(frozenset({"avx2", "amx_bf16"}), "x86_64") is None
    True
"""

from __future__ import annotations

import functools
import platform
from pathlib import Path

# The CPU flags (as /proc/cpuinfo names them) of bfloat16 multiply units, per `platform.machine()`.
BFLOAT16_FLAGS = {"x86_64": ("avx512_bf16", "amx_bf16"), "AMD64": ("avx512_bf16", "amx_bf16"),
                  "aarch64": ("bf16",), "arm64": ("bf16",)}


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The first processor's flags in /proc/cpuinfo ("flags" on x86, "Features" on ARM); empty where unreadable."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def bfloat16_warning(flags: frozenset[str] | None = None, machine: str | None = None) -> str | None:
    """The warning for a CPU without bfloat16 units, or None when it has them or its flags are unknown.

    `flags`, `machine`: this CPU's (`cpu_flags()`, `platform.machine()`) unless given.
    """
    flags = cpu_flags() if flags is None else flags
    wanted = BFLOAT16_FLAGS.get(machine or platform.machine())
    if not flags or wanted is None or flags.intersection(wanted):
        return None
    return (f"bf16 is slower than float32 on this CPU: it has no {' or '.join(wanted)} (no bfloat16 units), so "
            "the bfloat16 products are emulated (0.73x float32 on an AVX2-only AMD EPYC); serve float32, or "
            "int8 (--quantize int8), here.")
