"""Which kernels, and so which instruction sets, each runtime actually ran on this CPU.

A rate applies to a reader's servers only if their CPU would run the same kernels. Two sources:
- `hottest_kernels(call)`: `perf record` samples this process (every thread) while `call` repeats; the
  hottest functions of the runtime's libraries are named by their symbols where the library keeps them
  (LiteRT's XNNPACK kernels: `xnn_qd8_f32_qc8w_gemm_minmax_ukernel_4x8c8__avx2`, the ISA after `__`), else by
  the vector instructions around the hottest addresses (`objdump`; ONNX Runtime's library is stripped):
  `isa_of` tells VNNI (vpdpbusd), AMX (tdp*), AVX512_BF16 (vdpbf16ps), plain u8×s8 (vpmaddubsw) and s16
  (vpmaddwd) products and float32 FMA apart, on ymm (AVX2) or zmm (AVX-512) registers. Needs `perf` (and
  perf_event_paranoid ≤ 2, profiling one's own processes); None without it.
- `onednn_kernels()`: TensorFlow's oneDNN JIT-compiles its kernels into memory that perf cannot read, so a
  subprocess with ONEDNN_VERBOSE=1 runs one float32 and one bfloat16 dense layer (BERT-base's intermediate at
  25 tokens, a typical SST-2 sentence) and reports oneDNN's ISA line and the implementation it ran for each.

Example:
    >>> isa_of(["vpbroadcastd (%rdi),%ymm2", "vpmaddubsw %ymm0,%ymm2,%ymm3", "vpmaddwd %ymm12,%ymm3,%ymm3"])
    'AVX2 u8×s8 (vpmaddubsw)'
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

SAMPLE_HZ = 499
WINDOW_BYTES = 96  # disassembled on each side of a hot address of a stripped library
HOT_ADDRESSES = 8  # the hottest addresses of a stripped library whose instructions are read
NOT_RUNTIMES = ("libc.so", "libpython", "python3", "[kernel", "[unknown]", "libstdc++", "libm.so", "numpy")
# (what an instruction shows, what it means), the first match wins: the most specific first.
MARKERS = (("tdpb", "AMX"), ("vdpbf16ps", "AVX512_BF16 (vdpbf16ps)"), ("vpdpbusd", "VNNI u8×s8 (vpdpbusd)"),
           ("vpdpbssd", "AVX-VNNI-INT8 s8×s8 (vpdpbssd)"), ("vpmaddubsw", "u8×s8 (vpmaddubsw)"),
           ("vpmaddwd", "s16 products (vpmaddwd)"), ("vfmadd", "float32 FMA"))

ONEDNN_PROBE = """
import tensorflow as tf
for dtype in (tf.float32, tf.bfloat16):
    layer = tf.keras.layers.Dense(3072, dtype=dtype)
    dense = tf.function(layer)
    dense(tf.ones([25, 768], dtype))
"""


def isa_of(instructions: list[str]) -> str | None:
    """What a stretch of disassembled instructions computes with: the first of MARKERS found, with the width of
    the registers it uses (zmm: AVX-512, ymm: AVX2 or AVX-VNNI); None when it is no vector product."""
    for marker, meaning in MARKERS:
        lines = [line for line in instructions if line.replace("{vex}", "").lstrip().startswith(marker)]
        if not lines:
            continue
        if meaning == "AMX":
            return "AMX (tile products)"
        width = "AVX-512" if any("zmm" in line for line in lines) else "AVX2" if any("ymm" in line for line in lines) \
            else "SSE"
        if marker == "vpdpbusd" and width != "AVX-512":
            return "AVX-VNNI u8×s8 (vpdpbusd, ymm)"
        return f"{width} {meaning}"
    return None


def hottest_kernels(call: Callable[[], object], seconds: float = 1.0, top: int = 8) -> list[dict] | None:
    """The `top` hottest functions of the runtime libraries while `call` repeats for `seconds`: {"share" (of all
    samples), "library", "kernel" (symbol, or for a stripped library "<library> code"), "isa" (from the symbol's
    `__` suffix or the instructions)}. None where perf cannot profile this process."""
    if shutil.which("perf") is None or shutil.which("objdump") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="bert_tf_perf_") as scratch:
        data = Path(scratch) / "perf.data"
        recorder = subprocess.Popen(["perf", "record", "-q", "-F", str(SAMPLE_HZ), "-e", "cpu-clock", "-p",
                                     str(os.getpid()), "-o", str(data)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, env=_tool_environment())
        time.sleep(0.5)  # perf attaches
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            call()
        recorder.send_signal(signal.SIGTERM)  # perf writes its data and ends (SIGINT may be ignored in background jobs)
        recorder.wait()
        if not data.exists():
            return None
        report = _perf(["report", "--stdio", "-q", "--sort", "dso,sym"], data)
        paths = {Path(line.split()[-1]).name: line.split()[-1] for line in _perf(["buildid-list"], data).splitlines()
                 if line.strip()}
    return _kernels(report, paths, top)


def _perf(arguments: list[str], data: Path) -> str:
    return subprocess.run(["perf", *arguments, "-i", str(data)], capture_output=True, text=True,
                          env=_tool_environment()).stdout


def _tool_environment() -> dict[str, str]:
    """This environment without LD_PRELOAD: perf and objdump are not to run under `benchmarks.avx2_only`'s CPUID mask
    (perf's own SIGSEGV handler would take its faults)."""
    return {name: value for name, value in os.environ.items() if name != "LD_PRELOAD"}


def _kernels(report: str, paths: dict[str, str], top: int) -> list[dict]:
    """`hottest_kernels`' answer from `perf report --sort dso,sym` lines: named symbols as they are, the
    addresses of each stripped library summed into one entry, read by `_stripped_isa`."""
    named, stripped = collections.Counter(), collections.defaultdict(list)
    for line in report.splitlines():
        match = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[\.\]\s+(.+)", line)
        if not match or any(part in match[2] for part in NOT_RUNTIMES):
            continue
        share, library, symbol = float(match[1]) / 100, match[2], match[3].strip()
        if re.fullmatch(r"0x[0-9a-f]+", symbol):
            stripped[library].append((share, int(symbol, 16)))
        else:
            named[(library, symbol)] += share
    kernels = [{"share": share, "library": library, "kernel": symbol,
                "isa": symbol.rsplit("__", 1)[1] if symbol.startswith("xnn_") and "__" in symbol else None}
               for (library, symbol), share in named.items()]
    for library, addresses in stripped.items():
        kernels.append({"share": sum(share for share, _ in addresses), "library": library,
                        "kernel": f"{library} code", "isa": _stripped_isa(paths.get(library), addresses)})
    return sorted(kernels, key=lambda kernel: -kernel["share"])[:top]


def _stripped_isa(path: str | None, addresses: list[tuple[float, int]]) -> str | None:
    """`isa_of` the instructions around the hottest addresses of a library without symbols."""
    if path is None or not Path(path).exists():
        return None
    instructions = []
    for _, address in sorted(addresses, reverse=True)[:HOT_ADDRESSES]:
        listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={address - WINDOW_BYTES}",
                                  f"--stop-address={address + WINDOW_BYTES}", path], capture_output=True, text=True,
                                 env=_tool_environment())
        instructions += [line.split("\t", 1)[1] for line in listing.stdout.splitlines() if "\t" in line]
    return isa_of(instructions)


def product_kernels(kernels: list[dict], count: int = 2) -> list[dict]:
    """The `count` hottest of `hottest_kernels`' answer whose instructions are known (product kernels, not a thread
    pool's spinning), else the hottest one."""
    known = [kernel for kernel in kernels if kernel["isa"]]
    return known[:count] or kernels[:1]


def onednn_kernels() -> dict[str, str]:
    """oneDNN's ISA and its implementation of a float32 and a bfloat16 dense layer in a TensorFlow subprocess (this
    process's environment: a CPUID mask, ONEDNN_MAX_CPU_ISA apply): {"isa", "float32", "bfloat16"}."""
    environment = {**os.environ, "ONEDNN_VERBOSE": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    log = subprocess.run([sys.executable, "-c", ONEDNN_PROBE], capture_output=True, text=True, env=environment,
                         timeout=300).stdout
    kernels = {"isa": "not reported"}
    for line in log.splitlines():
        fields = line.split(",")
        if ",info,cpu,isa:" in line:
            kernels["isa"] = line.split("isa:", 1)[1]
        elif ",exec,cpu," in line:
            dtype = "bfloat16" if "bf16" in line else "float32"
            kernels.setdefault(dtype, f"oneDNN {fields[5]} {fields[6]}" if fields[6] else
                               f"Eigen, its products by oneDNN's {fields[5]} (sgemm)")
    # No oneDNN primitive for a dtype: TensorFlow's oneDNN ops are off (its default on CPUs without AVX-512 VNNI/BF16).
    return {"float32": "Eigen", "bfloat16": "Eigen (TensorFlow's oneDNN ops off: bfloat16 products in Eigen)",
            **kernels}
