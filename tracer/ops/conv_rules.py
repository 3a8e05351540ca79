"""JVP / transpose / batching rules for conv_general_dilated, conv_with_general_padding, conv."""
