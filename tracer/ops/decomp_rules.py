"""JVP / transpose / batching rules for cholesky, triangular_solve and the matrix decompositions tracer.numpy.linalg needs."""
