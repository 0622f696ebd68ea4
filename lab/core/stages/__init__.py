"""One module per pipeline stage, in pipeline order, and ``contract``: what a stage sees, decides and may ask for."""
