"""Benchmark harvesting: fill `precision_data/tf/dump/` with `.npy` tensors from tfdbg.

`live` drives a user's script wrapped in tfdbg's CLI (`tf_run`); `offline` reads the
`run_*` dirs of a dumping wrapper (`tf_dump`), directly when TensorFlow imports here and
through tfdbg's offline analyzer otherwise. Both write through `benchmark_writer`, which owns
the file names, the collision mapping and the never-overwrite rule.
"""
