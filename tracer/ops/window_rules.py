"""JVP / transpose / batching rules for reduce_window, select_and_scatter."""
