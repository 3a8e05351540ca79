"""JVP / transpose / batching rules for fft, batch_norm_*, reduce_precision, bitcast_convert_type."""
