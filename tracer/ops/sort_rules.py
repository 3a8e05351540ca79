"""JVP / transpose / batching rules for sort (comparator of 2n scalars, total order), map."""
