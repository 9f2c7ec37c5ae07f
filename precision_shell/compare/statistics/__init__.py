"""Statistics-first compares: a CANN statistics dump (`dump_data: stats`) against benchmark
tensors, the suspects it points at, and the targeted tensor dump that confirms them."""
