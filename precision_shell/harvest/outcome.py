"""What one harvest produced: saved and missed tensors, why it stopped, where files went.

These are the result objects `tf_run` and `tf_dump` return; the render layer prints them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SavedTensor:
    """One benchmark file written."""

    tensor_name: str
    dump_index: int
    timestamp: int  # the dump's own timestamp (microseconds), before any re-harvest bump
    path: str
    fresh_name: bool = False  # the canonical name was taken: written under a later timestamp
    replaced: bool = False  # --overwrite replaced a file of the same name


@dataclass(frozen=True)
class MissedTensor:
    """A dumped tensor that was not written, and why."""

    tensor_name: str
    dump_index: int
    reason: str


@dataclass
class HarvestOutcome:
    """One harvest: a live tfdbg session (`tf_run`) or one offline run dir (`tf_dump`)."""

    mode: str  # "live", "offline", "offline-pexpect"
    source: str  # the command line or the run dir
    out_dir: str
    total: int = 0
    saved: list[SavedTensor] = field(default_factory=list)
    missed: list[MissedTensor] = field(default_factory=list)
    # dumps that hold no numbers (resource handles, variants, strings): nothing to compare,
    # not written, no failure (a variable's values are its ReadVariableOp's output)
    no_values: list[MissedTensor] = field(default_factory=list)
    collisions: list[list[str]] = field(default_factory=list)  # tensor names sharing a key
    # saved tensors a lookup does not read: (tensor name, the newer file it reads instead)
    shadowed: list[tuple[str, str]] = field(default_factory=list)
    mapping_csv: str | None = None
    run_error: str | None = None  # the debugged run failed (tensors dumped before it are kept)
    aborted: str | None = None  # timeout, interrupt or crash: the harvest stopped early
    timestamps_estimated: bool = False
    child_status: str | None = None  # how the tfdbg process ended
    transcript: str | None = None  # the tfdbg session's screen output
    elapsed: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def fresh_names(self) -> list[SavedTensor]:
        return [s for s in self.saved if s.fresh_name]

    @property
    def with_values(self) -> int:
        """The dumps that hold numbers: those a harvest is to save."""
        return self.total - len(self.no_values)

    @property
    def summary_line(self) -> str:
        return f"{len(self.saved)} of {self.with_values} tensors saved to {self.out_dir}"

    @property
    def error_message(self) -> str | None:
        if self.aborted:
            return f"{self.aborted}; {self.summary_line}, {len(self.missed)} not saved"
        if self.run_error:
            return f"the debugged run failed ({self.run_error}); {self.summary_line}"
        if self.missed:
            n = len(self.missed)
            return f"{n} tensor{'s' if n != 1 else ''} not saved; {self.summary_line}"
        if self.shadowed:
            name, newer = self.shadowed[0]
            return (
                f"{len(self.shadowed)} of the tensors saved are shadowed by newer files already "
                f"in {self.out_dir} (e.g. {name}: {newer}), and vc, pt and ni read a tensor's "
                "newest file: move those away, or harvest into another dir (--into DIR)"
            )
        return None


@dataclass
class HarvestBatch:
    """`tf_dump`: one report per run dir harvested."""

    reports: list[HarvestOutcome]
    notes: list[str] = field(default_factory=list)

    @property
    def error_message(self) -> str | None:
        errors = [r.error_message for r in self.reports if r.error_message]
        if not errors:
            return None
        if len(self.reports) == 1:
            return errors[0]
        return f"{len(errors)} of {len(self.reports)} runs incomplete; first: {errors[0]}"
