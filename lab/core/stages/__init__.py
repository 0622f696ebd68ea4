"""One module per pipeline stage, in pipeline order."""
