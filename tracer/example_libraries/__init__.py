"""`tracer.example_libraries`: JAX's example libraries (`jax.example_libraries`), `stax`
(neural-network layers) and `optimizers` (first-order optimizers), so that programs
written with them run after the import rename."""
