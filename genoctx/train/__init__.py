"""Training recipes for the embedded model: corpus (with the leakage guard), loop, recipes."""
