"""The cuda backend's op emitters, one module per op group, and their table (`table`)."""
