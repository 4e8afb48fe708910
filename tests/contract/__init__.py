"""The citation contract, packing ranked hits into the working set."""
