"""CPU kernels pinned to one instruction set, so that a CPU run prints the same numbers on other CPUs.

A training run on a CPU is deterministic on one machine, but another CPU picks other kernels: torch
dispatches its vectorised kernels to the widest instruction set it finds (AVX-512 on one Xeon,
AVX2 on another), and MKL's matrix products pick their code path and blocking by CPU model. The
results differ in the last bits, and a run of many sampled episodes amplifies those bits into other
episodes (docs/learner-recipe.md: the main job printed three different tables on one Xeon under
its AVX-512 and AVX2 kernels and on another machine). Pinning both to AVX2 removes that source:

* torch's own kernels: ``ATEN_CPU_CAPABILITY=avx2`` (the same instructions, and IEEE-exact results,
  on every x86-64 CPU that has AVX2);
* MKL: its conditional numerical reproducibility branch ``MKL_CBWR=AVX2`` (the same results on
  every Intel CPU with AVX2, with a fixed number of threads; MKL does not promise it on other
  vendors' CPUs);
* oneDNN: ``ONEDNN_MAX_CPU_ISA=AVX2``.

This module holds :data:`CPU_KERNELS` (the choices and their variables) and :func:`pin_cpu_kernels`.
Both torch and MKL read their variable when they first compute, so the pin must come before the
process's first torch operation: ``agentenvs train`` pins at its start (``--cpu-kernels``).

>>> sorted(CPU_KERNELS)
['avx2', 'native']
>>> CPU_KERNELS["avx2"]["MKL_CBWR"]
'AVX2'
"""

from __future__ import annotations

import os
import sys

__all__ = ["CPU_KERNELS", "pin_cpu_kernels"]

#: ``--cpu-kernels`` choices -> the environment variables that pin them (``native``: none, the
#: widest kernels the CPU has).
CPU_KERNELS: dict[str, dict[str, str]] = {
    "native": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
}


def pin_cpu_kernels(kernels: str) -> str:
    """Set the variables of ``CPU_KERNELS[kernels]`` in this process (and so in its children) and
    return the kernels torch then reports (``torch.backends.cpu.get_cpu_capability()``, e.g.
    ``"AVX2"``). A CPU without AVX2 keeps its own kernels. When torch had already chosen wider
    kernels (a torch operation ran first), prints a one-line warning on stderr: the run is still
    correct, only not pinned. Raises ``ValueError`` for an unknown name."""
    if kernels not in CPU_KERNELS:
        raise ValueError(f"cpu kernels must be one of {sorted(CPU_KERNELS)}, got {kernels!r}")
    os.environ.update(CPU_KERNELS[kernels])
    import torch

    chosen = torch.backends.cpu.get_cpu_capability()
    if kernels == "avx2" and chosen.startswith("AVX512"):
        print(
            f"WARNING: torch chose its {chosen} kernels before they could be pinned to AVX2 (a "
            "torch operation ran first): this run's numbers may differ on other CPUs",
            file=sys.stderr,
        )
    return chosen
