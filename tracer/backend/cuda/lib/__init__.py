"""What the cuda backend's generated modules use at run time: device arrays, launch
configuration, device math and RNG helpers."""
