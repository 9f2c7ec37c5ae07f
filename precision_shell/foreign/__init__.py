"""Compare and root cause on a pair of foreign (non-Ascend) dumps: MegEngine io dumps and
SigmaStar DumpDebug dumps.

- `dumps`: open a dump from a path into one neutral form (tensors in execution order).
- `pairing`: which left tensor goes with which right tensor, and why some go with none.
- `metrics`: the metric columns and their formulas (float64).
- `verdict`: the default threshold rules per family.
- `root_cause`: failing tensors whose inputs pass (MegEngine graph), first failing layer
  (SigmaStar).
- `run`: the whole compare: CSV, summary.json, the result object `vc` / `ac -c` return.
"""
