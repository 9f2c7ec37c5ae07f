"""Tests of the replay kernels, fused-chain replay and own-error measurement."""
