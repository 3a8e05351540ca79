"""JVP / transpose / batching rules for composite, custom_call, tuple / get_tuple_element, optimization_barrier."""
