"""What the numbers were measured on: CPU, cores, instruction-set flags, load, library versions, settings.

Example:
    >>> info = machine_info()
    >>> sorted(info)[:3]
    ['cpu_flags', 'cpu_mhz', 'cpu_model']
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
from pathlib import Path

from benchmarks.avx2_only import HIDDEN_FLAGS, MASK_VARIABLE
from benchmarks.harness import usable_cores

# Instruction sets that decide matrix-multiply speed on x86 CPUs.
FLAGS_OF_INTEREST = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8")
PACKAGES = ("tensorflow", "tensorflow-text", "keras", "keras-hub", "torch", "transformers", "tokenizers", "numpy",
            "ai-edge-litert")
# Settings that change which kernels TensorFlow, oneDNN and PyTorch use.
ENVIRONMENT = ("TF_ENABLE_ONEDNN_OPTS", "ONEDNN_MAX_CPU_ISA", "LD_PRELOAD", "ONEDNN_DEFAULT_FPMATH_MODE", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS",
               "OMP_NUM_THREADS", "XLA_FLAGS", "TF_XLA_FLAGS", "KERAS_BACKEND")


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields from /proc/cpuinfo (empty where it does not exist)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    fields = {}
    for line in text.split("\n\n")[0].splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def visible_flags(cpu: dict[str, str] | None = None) -> set[str]:
    """The CPU flags that programs see: /proc/cpuinfo's, less those `benchmarks.avx2_only` hides from CPUID."""
    flags = set((_cpuinfo() if cpu is None else cpu).get("flags", "").split())
    return flags - HIDDEN_FLAGS if os.environ.get(MASK_VARIABLE) else flags


def machine_info() -> dict:
    """A JSON-ready description of this machine and software stack, with the current load average."""
    cpu = _cpuinfo()
    flags = visible_flags(cpu)
    hidden = sorted(set(cpu.get("flags", "").split()) - flags)
    return {
        "cpu_model": cpu.get("model name") or platform.processor() or "unknown",
        "cpu_family_model": f"{cpu.get('cpu family', '?')}/{cpu.get('model', '?')}",
        "cpu_mhz": cpu.get("cpu MHz"),
        "logical_cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "cpu_flags": {flag: flag in flags for flag in FLAGS_OF_INTEREST},
        "cpuid_hidden_flags": [flag for flag in hidden if flag in FLAGS_OF_INTEREST],
        "memory_gib": _memory_gib(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "versions": {package: _version(package) for package in PACKAGES},
        "environment": {name: os.environ.get(name) for name in ENVIRONMENT},
    }


def machine_line(info: dict) -> str:
    """One Markdown line: CPU, cores, flags, load and the main versions."""
    flags = ", ".join(flag.upper() for flag, present in info["cpu_flags"].items() if present) or "none of note"
    versions = info["versions"]
    stack = ", ".join(f"{name} {versions[name]}" for name in ("tensorflow", "keras", "keras-hub", "torch", "transformers")
                      if versions.get(name))
    load = "/".join(f"{x:.1f}" for x in info["load_average"])
    hidden = info.get("cpuid_hidden_flags")
    if hidden:
        flags += (f" (CPUID limited to AVX2 by benchmarks/avx2_only.py: the CPU's {', '.join(map(str.upper, hidden))} "
                  "hidden)")
    return (
        f"{info['cpu_model']} (family/model {info['cpu_family_model']}), {info['usable_cores']} usable of "
        f"{info['logical_cores']} logical cores, {info['memory_gib']} GiB; flags: {flags}; load average {load} "
        f"(1/5/15 min); {stack}"
    )
