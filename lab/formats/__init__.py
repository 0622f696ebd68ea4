"""Importers and exporters for the transcript formats agent builders have."""
